"""The wire protocol between host and worker: JSON lines over a private pipe.

Request: ``{"id": int, "op": str, ...arguments}``. Reply: ``{"id": int, "ok": bool,
"value": ..., "category": str, "message": str, "output": str, "seconds": float}``.
The host trusts nothing in a reply beyond what ``parse_reply`` checks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

#: Failure categories. An infrastructure failure is never scored as a task failure.
OK = "ok"
TIMEOUT = "timeout"
MEMORY = "memory"
CRASH = "crash"
PROTOCOL = "protocol"
FORBIDDEN = "forbidden"
EXCEPTION = "exception"
INVALID_RETURN = "invalid_return"
CATEGORIES = (OK, TIMEOUT, MEMORY, CRASH, PROTOCOL, FORBIDDEN, EXCEPTION, INVALID_RETURN)

OPS = ("load", "reset", "step", "tool", "call", "ping")
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
_DECODER = json.JSONDecoder()


def encode(message: dict[str, Any]) -> bytes:
    return (_ENCODER.encode(message) + "\n").encode()


def decode(line: bytes) -> Any:
    """One JSON line (bytes); ValueError (also for bad UTF-8) or RecursionError when it is not."""
    return _DECODER.decode(line.decode())


def parse_reply(line: bytes, expected_id: int) -> Outcome:
    """Validate one reply line; anything unexpected becomes a ``protocol`` failure."""
    try:
        msg = decode(line)
    except (ValueError, RecursionError):
        return failure(PROTOCOL, f"worker sent a line that is not JSON: {line[:80]!r}")
    if type(msg) is not dict or not msg.keys() <= _REPLY_KEYS or "id" not in msg or "ok" not in msg:
        return failure(PROTOCOL, "worker reply does not follow the schema")
    if msg["id"] != expected_id or isinstance(msg["id"], bool):
        return failure(PROTOCOL, f"worker replied to request {msg['id']!r} while {expected_id} was pending")
    seconds = msg.get("seconds", 0.0)
    if type(seconds) is not float and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))) \
            or not math.isfinite(seconds):
        return failure(PROTOCOL, "worker reply has an invalid 'seconds' field")
    output = msg.get("output", "")
    if not isinstance(output, str):
        return failure(PROTOCOL, "worker reply has an invalid 'output' field")
    if msg["ok"] is True:
        return Outcome(OK, value=msg.get("value"), output=output, seconds=float(seconds))
    category = msg.get("category")
    message = msg.get("message", "")
    if category not in CATEGORIES or category == OK or not isinstance(message, str):
        return failure(PROTOCOL, "worker reply names an unknown failure category")
    return Outcome(category, message=message[:2000], output=output, seconds=float(seconds))
