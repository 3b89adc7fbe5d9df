"""The wire protocol: every malformed reply is a ``protocol`` failure, never an exception."""

from __future__ import annotations

import json

import pytest

from spadegym.sandbox import Sandbox, SandboxConfig, protocol

GOOD = {"id": 3, "ok": True, "value": {"observation": "x"}, "output": "", "seconds": 0.01}


def line(**changes: object) -> bytes:
    msg = {**GOOD, **changes}
    return json.dumps({k: v for k, v in msg.items() if v is not ...}).encode()


def test_a_well_formed_reply_is_ok() -> None:
    outcome = protocol.parse_reply(line(), 3)
    assert outcome.ok and outcome.value == {"observation": "x"}


@pytest.mark.parametrize(("raw", "says"), [
    (b"\x00\xffgarbage", "not JSON"),
    (b"[" * 100_000, "not JSON"),
    (b"[1, 2, 3]", "schema"),
    (line(extra="forged"), "schema"),
    (line(ok=...), "schema"),
    (line(id=4), "while 3 was pending"),
    (line(id=True), "pending"),
    (line(id="3"), "pending"),
    (line(seconds="soon"), "seconds"),
    (b'{"id": 3, "ok": true, "seconds": NaN}', "NaN"),
    (line(output=["x"]), "output"),
    (line(ok=False, category="ok"), "unknown failure category"),
    (line(ok=False, category="pwned"), "unknown failure category"),
    (line(ok=False, category="infra"), "unknown failure category"),  # unscored: only the host may say it
    (line(ok=False, category="exception", message=7), "unknown failure category"),
])
def test_forged_and_garbage_replies_are_protocol_failures(raw: bytes, says: str) -> None:
    outcome = protocol.parse_reply(raw, 3)
    assert outcome.status == protocol.PROTOCOL
    assert says in outcome.message


def test_a_failure_reply_keeps_its_category_and_caps_the_message() -> None:
    outcome = protocol.parse_reply(line(ok=False, category="timeout", message="m" * 5000), 3)
    assert outcome.status == "timeout" and len(outcome.message) == 2000


BIG_SOLUTION = '''
class BigEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "ok", 0.0, False, False, {}

    def solution(self):
        return ["a" * 100 for _ in range(1000)]
'''


def test_oversized_reply_line_is_a_protocol_failure_and_the_worker_is_replaced() -> None:
    with Sandbox(SandboxConfig(line_limit=4096, namespaces=False)) as box:
        env = box.open(BIG_SOLUTION, "big.py")
        assert env.loaded.ok and env.reset(seed=0).ok
        outcome = env.call("solution")
        assert outcome.status == protocol.PROTOCOL and "line size limit" in outcome.message
        assert env.worker is not None and not env.worker.alive
        again = env.reset(seed=1)  # a fresh worker reloads the same source
        assert again.ok and again.value["observation"] == "ready"


def test_reply_to_another_request_id_is_a_protocol_failure(sandbox: Sandbox) -> None:
    env = sandbox.open(BIG_SOLUTION, "big.py")
    assert env.loaded.ok and env.worker is not None
    worker = env.worker
    worker._next_id += 5  # the worker answers id N+6; pretend we wait for N+1
    pending = worker.send("ping", 2.0)
    pending.request_id -= 5
    from spadegym.sandbox.transport import gather

    outcome = gather([pending])[0]
    assert outcome.status == protocol.PROTOCOL and "pending" in outcome.message
    assert not worker.alive
    env.close()
