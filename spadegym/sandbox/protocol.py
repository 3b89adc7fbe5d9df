"""The wire protocol between host and worker: JSON lines over a private pipe.

Request: ``{"id": int, "op": str, ...arguments}``. Reply: ``{"id": int, "ok": bool,
"value": ..., "category": str, "message": str, "output": str, "seconds": float}``.
The host trusts nothing in a reply beyond what ``parse_reply`` checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..text import safe_text

#: Failure categories. An infrastructure failure is never scored as a task failure.
OK = "ok"
TIMEOUT = "timeout"
MEMORY = "memory"
CRASH = "crash"
PROTOCOL = "protocol"
FORBIDDEN = "forbidden"
EXCEPTION = "exception"
INVALID_RETURN = "invalid_return"
TOO_LARGE = "too_large"  # a reply or an episode over a size limit (menu, text, nesting, bytes stored)
INFRA = "infra"  # work lost with a Ray actor or a remote server: the host's to say, never scored
CATEGORIES = (OK, TIMEOUT, MEMORY, CRASH, PROTOCOL, FORBIDDEN, EXCEPTION, INVALID_RETURN, TOO_LARGE, INFRA)
#: What a worker's failed reply may name: an environment cannot declare its own failure infrastructure (unscored).
WORKER_FAILURES = frozenset(CATEGORIES) - {OK, INFRA}

OPS = ("load", "reset", "step", "tool", "tools", "call", "ping")
_REPLY_KEYS = {"id", "ok", "value", "category", "message", "output", "seconds"}


@dataclass
class Outcome:
    """The result of one request to a worker: always data, never an exception."""

    status: str
    value: Any = None
    message: str = ""
    output: str = ""
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "seconds": round(self.seconds, 6)}


def failure(category: str, message: str, seconds: float = 0.0, output: str = "") -> Outcome:
    return Outcome(status=category, message=message, seconds=seconds, output=output)


# Built once: json.dumps with arguments builds a new encoder on every call (the
# per-step cost matters: replies are the hot path of pipelined rollouts).
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


# Replies never hold NaN or infinities: the decoder refuses the tokens outright (a number too
# large for a float, or an integer too long, is refused by ``schema.check_value``).
_REPLY_DECODER = json.JSONDecoder(parse_constant=_constant)
_DECODER = json.JSONDecoder()


def encode(message: dict[str, Any]) -> bytes:
    return (_ENCODER.encode(message) + "\n").encode()


def decode(line: bytes) -> Any:
    """One JSON line (bytes); ValueError (also for bad UTF-8) or RecursionError when it is not."""
    return _DECODER.decode(line.decode())


def decode_reply(line: bytes) -> Any:
    """One JSON line from an untrusted peer (a worker, a remote server): ValueError for bad UTF-8, bad JSON
    or a NaN or infinity token, RecursionError when nested too deep."""
    return _REPLY_DECODER.decode(line.decode())


def parse_reply(line: bytes, expected_id: int, output_limit: int = 1 << 16) -> Outcome:
    """Validate one reply's envelope; anything unexpected becomes a ``protocol`` failure.

    The value is checked per request by ``schema.check_value``; the message and the
    captured output are cut to size and made safe text here.
    """
    try:
        msg = decode_reply(line)
    except (ValueError, RecursionError, MemoryError) as exc:
        return failure(PROTOCOL, f"worker sent a line that is not JSON ({str(exc)[:80]}): {line[:60]!r}")
    if type(msg) is not dict or not msg.keys() <= _REPLY_KEYS or "id" not in msg or type(msg.get("ok")) is not bool:
        return failure(PROTOCOL, "worker reply does not follow the schema")
    if type(msg["id"]) is not int or msg["id"] != expected_id:
        shown = msg["id"] if type(msg["id"]) is int else type(msg["id"]).__name__
        return failure(PROTOCOL, f"worker replied to request {shown} while {expected_id} was pending")
    seconds = msg.get("seconds", 0.0)
    if type(seconds) not in (int, float) or not 0 <= seconds < 1e9:
        return failure(PROTOCOL, "worker reply has an invalid 'seconds' field")
    output = msg.get("output", "")
    if type(output) is not str:
        return failure(PROTOCOL, "worker reply has an invalid 'output' field")
    output = safe_text(output[:output_limit])
    if msg["ok"]:
        return Outcome(OK, value=msg.get("value"), output=output, seconds=float(seconds))
    category = msg.get("category")
    message = msg.get("message", "")
    if category not in WORKER_FAILURES or type(message) is not str:
        return failure(PROTOCOL, "worker reply names an unknown failure category")
    return Outcome(category, message=safe_text(message[:2000]), output=output, seconds=float(seconds))
