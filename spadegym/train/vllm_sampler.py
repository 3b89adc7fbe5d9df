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

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from ..errors import UserError
from .vllm_server import ADAPTER, BASE_NAME

#: Concurrent requests in flight per server: enough for vLLM to batch a round's episodes.
PER_SERVER = 64


class VLLMSampler:
    """Completions from token ids on one or more vLLM servers, and weight pushes to all of them."""

    def __init__(self, urls: Sequence[str], *, eos_id: int, temperature: float, seeded: bool = True,
                 timeout_s: float = 600.0):
        if not urls:
            raise ValueError("a sampler needs at least one server")
        self.urls = [u.rstrip("/") for u in urls]
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
        choice = self._post(url, "/v1/completions", body)["choices"][0]
        ids = list(choice["token_ids"])
        logprobs = [float(x) for x in choice["logprobs"]["token_logprobs"]]
        if len(logprobs) != len(ids):
            raise RuntimeError(f"the vLLM server at {url} returned {len(ids)} tokens and {len(logprobs)} log-probs")
        return ids, logprobs

    def prompt_logprobs(self, ids: list[int], url: str | None = None) -> list[float]:
        """The server's log-probability of each token of ``ids`` after the ones before it (the first has none)."""
        body = {"model": self.model, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 1.0}
        choice = self._post(url or self.urls[0], "/v1/completions", body)["choices"][0]
        out = []
        for token, entry in zip(ids[1:], choice["prompt_logprobs"][1:]):
            out.append(float(entry[str(token)]["logprob"]))
        return out

    # -- weights back to the servers ----------------------------------------------
    def load_adapter(self, path: str) -> None:
        """Serve the LoRA adapter saved in ``path`` on every server, in place of the one served before."""
        body = {"lora_name": ADAPTER, "lora_path": path, "load_inplace": True}
        for url in self.urls:
            self._post(url, "/v1/load_lora_adapter", body, json_reply=False)
            self._forget_prefixes(url)
        self.model = ADAPTER

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
        try:
            response = self.client.post(url + route, json=body)
        except httpx.HTTPError as exc:
            raise UserError(f"the vLLM server at {url} did not answer {route} ({type(exc).__name__}: {exc}).") from None
        if response.status_code == 404 and route in ("/collective_rpc", "/reset_prefix_cache"):
            raise UserError(f"the vLLM server at {url} has no {route} route; start it with VLLM_SERVER_DEV_MODE=1.")
        if response.status_code >= 400:
            raise UserError(f"the vLLM server at {url} refused {route} (HTTP {response.status_code}: "
                            f"{response.text.strip()[:300]}).")
        return response.json() if json_reply else response.text

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
