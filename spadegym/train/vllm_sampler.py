"""Sampling through vLLM's OpenAI-compatible servers, and pushing the trained weights back to them.

Prompts go to the completions route as token ids and the reply comes back as
token ids with their log-probabilities (``return_token_ids``, ``logprobs``),
so nothing is re-tokenised: the episode's sequence is built from the ids the
server sampled, exactly as from the in-process sampler's. Each prompt is one
request with its own seed (drawn from the policy's random stream, so a run and
an evaluation stream stay reproducible; not on a CPU server, whose seeded
generators cannot rewind a prompt split over steps), spread round-robin over the
servers (data-parallel inference); vLLM batches the concurrent requests itself.

Weights go back after every update: a LoRA adapter is saved and hot-loaded in
place on every server (``/v1/load_lora_adapter`` with ``load_inplace``); full
weights are saved and reloaded in place (``/collective_rpc`` ``reload_weights``,
which needs ``VLLM_SERVER_DEV_MODE=1`` on the server and the folder visible to it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2 as httpx  # what openai (a core requirement) installs; plain httpx comes only with some extras

from ..errors import UserError
from ..jsondata import UntrustedJSONError, loads
from .vllm_server import ADAPTER, BASE_NAME

#: Concurrent requests in flight per server: enough for vLLM to batch a round's episodes.
PER_SERVER = 64
#: The most a reply may hold: a completion's ids and log-probs, or a long prompt's log-probs, fit many times over.
MAX_REPLY_BYTES = 64 << 20


class VLLMSampler:
    """Completions from token ids on one or more vLLM servers, and weight pushes to all of them."""

    def __init__(self, urls: Sequence[str], *, eos_id: int, temperature: float, seeded: bool = True,
                 timeout_s: float = 600.0, vocab_size: int | None = None):
        if not urls:
            raise ValueError("a sampler needs at least one server")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout_s, self.vocab_size = timeout_s, vocab_size
        self.eos_id, self.temperature, self.seeded = eos_id, temperature, seeded
        limits = httpx.Limits(max_connections=PER_SERVER * len(self.urls), max_keepalive_connections=PER_SERVER)
        self.client = httpx.Client(timeout=timeout_s, limits=limits)
        self.pool = ThreadPoolExecutor(max_workers=PER_SERVER * len(self.urls), thread_name_prefix="spadegym-vllm")
        self.model = BASE_NAME  # the adapter's name once one is loaded
        self._next = 0

    def generate(self, prompts: Sequence[list[int]], max_new_tokens: int, seeds: Sequence[int], greedy: bool = False,
                 ) -> list[tuple[list[int], list[float]]]:
        """One completion per prompt: its ids (ending with EOS when the model stopped) and their log-probs."""
        start, self._next = self._next, self._next + len(prompts)
        jobs = [self.pool.submit(self._complete, self.urls[(start + i) % len(self.urls)], prompt, max_new_tokens,
                                 seed, greedy) for i, (prompt, seed) in enumerate(zip(prompts, seeds))]
        return [job.result() for job in jobs]

    def _complete(self, url: str, prompt: list[int], max_new_tokens: int, seed: int, greedy: bool,
                  ) -> tuple[list[int], list[float]]:
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_new_tokens,
                "temperature": 0.0 if greedy else self.temperature, "top_p": 1.0, "top_k": -1,
                "logprobs": 0, "return_token_ids": True, "stop_token_ids": [self.eos_id],
                "skip_special_tokens": False, **({"seed": seed} if self.seeded else {})}
        reply = self._post(url, "/v1/completions", body)
        try:
            choice = reply["choices"][0]
            ids, logprobs = choice["token_ids"], choice["logprobs"]["token_logprobs"]
        except (KeyError, IndexError, TypeError):
            raise self._not_a_completion(url, "it has no choice with token_ids and logprobs") from None
        if not isinstance(ids, list) or not isinstance(logprobs, list) or len(ids) != len(logprobs):
            raise self._not_a_completion(url, "its token ids and log-probs are not two lists of one length")
        if len(ids) > max_new_tokens or not all(self._is_token(t) for t in ids):
            raise self._not_a_completion(url, f"it holds more than {max_new_tokens} tokens or ids that are none")
        if not all(_is_logprob(x) for x in logprobs):
            raise self._not_a_completion(url, "its log-probs are not finite numbers at most 0")
        return ids, [float(x) for x in logprobs]

    def _is_token(self, token: Any) -> bool:
        return type(token) is int and 0 <= token < (self.vocab_size or 1 << 31)

    @staticmethod
    def _not_a_completion(url: str, why: str) -> UserError:
        """A reply that training cannot use as it is: what is trained is what was sampled, so it is refused."""
        return UserError(f"the vLLM server at {url} sent a completion spadegym cannot train on ({why}); check that "
                         "train.vllm_urls names vLLM servers of the policy's model.")

    def prompt_logprobs(self, ids: list[int], url: str | None = None) -> list[float]:
        """The server's log-probability of each token of ``ids`` after the ones before it (the first has none)."""
        body = {"model": self.model, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 1.0}
        url = url or self.urls[0]
        try:
            entries = self._post(url, "/v1/completions", body)["choices"][0]["prompt_logprobs"][1:]
            out = [entry[str(token)]["logprob"] for token, entry in zip(ids[1:], entries, strict=True)]
        except (KeyError, IndexError, TypeError, ValueError):
            raise self._not_a_completion(url, "it has no log-prob for every prompt token") from None
        if not all(_is_logprob(x) for x in out):
            raise self._not_a_completion(url, "its log-probs are not finite numbers at most 0")
        return [float(x) for x in out]

    # -- weights back to the servers ----------------------------------------------
    def load_adapter(self, path: str) -> None:
        """Serve the LoRA adapter saved in ``path`` on every server, in place of the one served before."""
        body = {"lora_name": ADAPTER, "lora_path": path, "load_inplace": True}
        for url in self.urls:
            self._post(url, "/v1/load_lora_adapter", body, json_reply=False)
            self._forget_prefixes(url)
        self.model = ADAPTER

    def unload_adapter(self) -> None:
        """Every server serves its base model again: the adapter's folder may go (a server reads it when it needs it)."""
        if self.model != ADAPTER:
            return
        for url in self.urls:
            self._post(url, "/v1/unload_lora_adapter", {"lora_name": ADAPTER}, json_reply=False)
            self._forget_prefixes(url)
        self.model = BASE_NAME

    def reload_weights(self, path: str) -> None:
        """Every server reads the full weights saved in ``path`` in place of its own."""
        body = {"method": "reload_weights", "kwargs": {"weights_path": path}}
        for url in self.urls:
            self._post(url, "/collective_rpc", body, json_reply=False)
            self._forget_prefixes(url)

    def _forget_prefixes(self, url: str) -> None:
        """Cached keys and values belong to the weights that computed them: the server drops them."""
        self._post(url, "/reset_prefix_cache", {}, json_reply=False)

    def _post(self, url: str, route: str, body: dict[str, Any], json_reply: bool = True) -> Any:
        """The server's reply to ``body``, read as data: at most MAX_REPLY_BYTES within ``timeout_s`` in all, its
        JSON bounded in depth."""
        try:
            status, data = self._read(url + route, body)
        except httpx.HTTPError as exc:
            raise UserError(f"the vLLM server at {url} did not answer {route} ({type(exc).__name__}: {exc}).") from None
        if status == 404 and route in ("/collective_rpc", "/reset_prefix_cache"):
            raise UserError(f"the vLLM server at {url} has no {route} route; start it with VLLM_SERVER_DEV_MODE=1.")
        text = data.decode(errors="replace")
        if status >= 400:
            raise UserError(f"the vLLM server at {url} refused {route} (HTTP {status}: {' '.join(text.split())[:300]}).")
        if not json_reply:
            return text
        try:
            return loads(data, f"the reply of the vLLM server at {url}{route}", max_bytes=MAX_REPLY_BYTES)
        except UntrustedJSONError as exc:
            raise UserError(f"{exc}.") from None

    def _read(self, url: str, body: dict[str, Any]) -> tuple[int, bytes]:
        deadline = time.monotonic() + self.timeout_s
        with self.client.stream("POST", url, json=body) as response:
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_REPLY_BYTES:
                    raise httpx.ReadError(f"the reply passed {MAX_REPLY_BYTES:,} bytes")
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"the reply took more than {self.timeout_s:g}s")
            return response.status_code, bytes(data)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def _is_logprob(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value <= 1e-6
