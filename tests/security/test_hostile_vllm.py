"""A generation server's reply is data: the vLLM sampler reads it bounded in bytes, depth and time, and trains on
nothing but token ids of the policy's vocabulary with finite log-probs; anything else is one sentence."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spadegym.errors import UserError
from spadegym.train.vllm_sampler import VLLMSampler


@contextmanager
def server(reply: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A server on 127.0.0.1 whose every POST is answered by ``reply``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                reply(self)
            except OSError:
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def sends(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return reply


def completion(ids: object, logprobs: object) -> bytes:
    return json.dumps({"choices": [{"token_ids": ids, "logprobs": {"token_logprobs": logprobs}}]}).encode()


def sample(url: str, timeout_s: float = 10.0) -> list[tuple[list[int], list[float]]]:
    sampler = VLLMSampler([url], eos_id=0, temperature=1.0, seeded=False, timeout_s=timeout_s, vocab_size=100)
    try:
        return sampler.generate([[1, 2, 3]], max_new_tokens=4, seeds=[0])
    finally:
        sampler.close()


def test_a_well_formed_completion_is_taken_as_it_is():
    with server(sends(completion([5, 7, 0], [-0.5, -1.25, 0.0]))) as url:
        assert sample(url) == [([5, 7, 0], [-0.5, -1.25, 0.0])]


@pytest.mark.parametrize(("body", "says"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
    (completion([5, 100], [-1.0, -1.0]), "ids that are none"),  # outside the policy's vocabulary
    (completion([5, "7"], [-1.0, -1.0]), "ids that are none"),
    (completion([1, 2, 3, 4, 5], [-1.0] * 5), "more than 4 tokens"),
    (completion([5, 7], [-1.0]), "not two lists of one length"),
    (completion([5, 7], [-1.0, float("nan")]), "not finite numbers"),
    (completion([5, 7], [-1.0, 3.0]), "not finite numbers at most 0"),
    (json.dumps({"choices": []}).encode(), "no choice with token_ids"),
])
def test_a_reply_training_cannot_use_is_one_sentence(body: bytes, says: str):
    with server(sends(body)) as url, pytest.raises(UserError) as refused:
        sample(url)
    assert says in str(refused.value) and f"the vLLM server at {url}" in str(refused.value)


def test_a_huge_reply_is_cut_at_its_bound_and_a_trickled_one_at_its_deadline(monkeypatch):
    monkeypatch.setattr("spadegym.train.vllm_sampler.MAX_REPLY_BYTES", 1 << 16)
    with server(sends(b'{"pad": "' + b"x" * (1 << 20) + b'"}')) as url, pytest.raises(UserError, match="passed 65,536 bytes"):
        sample(url)

    def trickle(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        for _ in range(1000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.05)

    started = time.monotonic()
    with server(trickle) as url, pytest.raises(UserError, match="took more than 1s"):
        sample(url, timeout_s=1.0)
    assert time.monotonic() - started < 10
