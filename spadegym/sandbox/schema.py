"""The strict schema of reply values: what the host accepts from a worker, per request.

The worker is the environment's process, so its replies are untrusted: code in
the file can reach the reply pipe and write anything. ``check_value`` accepts a
value only when every field has its documented type, every number is finite,
every structure is shallow and small, and every string is safe text
(``spadegym.text.safe_text``); it returns the checked copy or raises
``Rejected`` with a failure category (``protocol`` for a wrong shape,
``too_large`` for a size over a limit) and one sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..envfile.contract import ACTION_FORMATS
from ..text import is_safe, safe_text
from . import protocol

#: Characters of an observation a worker sends at most (longer ones are cut in the worker).
OBSERVATION_CHARS = 200_000
#: Characters of ``info`` (as JSON) a worker sends at most (larger ones are cut in the worker).
INFO_CHARS = 8192
#: Nesting any structure in a reply may have (info, tool schemas): deeper is not data an agent reads.
MAX_DEPTH = 16
_OPTIONAL_METHODS = frozenset({"valid_actions", "solution", "hint", "get_tools", "execute_tool"})
_SLACK = 64  # room for the worker's "...[truncated]" marks


class Rejected(ValueError):
    """A reply value the host refuses: ``category`` and a one-sentence ``message``."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class Limits:
    """Sizes a reply may have (from ``SandboxConfig``)."""

    menu_actions: int = 4096
    menu_chars: int = 65_536
    text_chars: int = OBSERVATION_CHARS + _SLACK
    tools: int = 64
    structure_chars: int = 65_536


def _bad(what: str) -> Rejected:
    return Rejected(protocol.PROTOCOL, f"the worker's reply has an invalid {what} (a forged or corrupted reply)")


def _text(value: Any, what: str, limit: int) -> str:
    if type(value) is not str:
        raise _bad(what)
    if len(value) > limit:
        raise Rejected(protocol.TOO_LARGE, f"{what} has {len(value):,} characters, above the limit of {limit:,}")
    return safe_text(value)


def _number(value: Any, what: str) -> float:
    if type(value) not in (int, float):  # bool is an int subclass and is refused here
        raise _bad(what)
    try:
        number = float(value)
    except OverflowError:
        raise _bad(what) from None
    if not math.isfinite(number):
        raise _bad(what)
    return number


def _flag(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise _bad(what)
    return value


def _text_list(value: Any, what: str, count: int, chars: int) -> list[str]:
    if type(value) is not list:
        raise _bad(what)
    if len(value) > count:
        raise Rejected(protocol.TOO_LARGE, f"{what} lists {len(value):,} entries, above the limit of {count:,}")
    try:
        joined = "\n".join(value)  # one pass in C: the type check, the size and the text check
    except TypeError:
        raise _bad(what) from None
    total = len(joined) - max(0, len(value) - 1)
    if total > chars:
        raise Rejected(protocol.TOO_LARGE, f"{what} holds {total:,} characters, above the limit of {chars:,}")
    return value if is_safe(joined) else [safe_text(v) for v in value]


def structure(value: Any, what: str, chars: int, depth: int = MAX_DEPTH) -> Any:
    """A checked copy of JSON data: at most ``depth`` levels and ``chars`` characters (iterative)."""
    budget = chars
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]  # (value, parent, key, level)
    while stack:
        item, parent, key, level = stack.pop()
        budget -= 1
        kind = type(item)
        if kind is str:
            budget -= len(item)
            copy: Any = safe_text(item)
        elif kind in (int, float):
            copy = item
            if (kind is float and not math.isfinite(item)) or (kind is int and item.bit_length() > 320):
                raise _bad(what)
        elif item is None or kind is bool:
            copy = item
        elif kind is list or kind is dict:
            if level >= depth:
                raise Rejected(protocol.TOO_LARGE, f"{what} nests deeper than {depth} levels")
            if kind is list:
                copy = [None] * len(item)
                stack += [(v, copy, i, level + 1) for i, v in enumerate(item)]
            else:
                copy = {}
                for k, v in item.items():
                    budget -= len(k)
                    k = safe_text(k)
                    copy[k] = None
                    stack.append((v, copy, k, level + 1))
        else:
            raise _bad(what)
        if budget < 0:
            raise Rejected(protocol.TOO_LARGE, f"{what} is larger than {chars:,} characters")
        parent[key] = copy
    return root[0]


def _tools(value: Any, limits: Limits) -> list[dict[str, Any]]:
    if type(value) is not list or any(type(v) is not dict for v in value):
        raise _bad("tool list")
    if len(value) > limits.tools:
        raise Rejected(protocol.TOO_LARGE, f"get_tools() lists {len(value)} tools, above the limit of {limits.tools}")
    return structure(value, "the tool list", limits.structure_chars)


_RESET_FIELDS = frozenset({"observation", "info", "valid_actions", "hint", "tools", "criteria"})
_MAX_CRITERIA = 32
_MOVE_ONLY = frozenset({"reward", "terminated", "truncated"})
_MOVE_FIELDS = _RESET_FIELDS | _MOVE_ONLY


def _observation_reply(value: Any, limits: Limits, moved: bool) -> dict[str, Any]:
    """The reply to reset (``moved`` False) or to step and tool (True)."""
    if type(value) is not dict:
        raise _bad("reply value")
    keys = value.keys()
    if not keys <= (_MOVE_FIELDS if moved else _RESET_FIELDS) or "observation" not in value or "info" not in value:
        raise _bad("set of fields")
    out: dict[str, Any] = {"observation": _text(value["observation"], "the observation", limits.text_chars)}
    info = value["info"]
    if type(info) is not dict:
        raise _bad("info")
    out["info"] = structure(info, "info", 2 * INFO_CHARS) if info else {}
    if moved:
        if not keys >= _MOVE_ONLY:
            raise _bad("set of fields")
        out["reward"] = _number(value["reward"], "reward")
        out["terminated"] = _flag(value["terminated"], "terminated flag")
        out["truncated"] = _flag(value["truncated"], "truncated flag")
    if "valid_actions" in value:
        out["valid_actions"] = _text_list(value["valid_actions"], "valid_actions()", limits.menu_actions,
                                          limits.menu_chars)
    if "hint" in value:
        out["hint"] = None if value["hint"] is None else _text(value["hint"], "the hint", limits.text_chars)
    if "tools" in value:
        out["tools"] = _tools(value["tools"], limits)
    if "criteria" in value:
        out["criteria"] = _criteria(value["criteria"])
    return out


def _criteria(value: Any) -> list[bool | str]:
    """Success criteria evaluated at reset: each True, False, or the short text of what it raised."""
    if type(value) is not list or len(value) > _MAX_CRITERIA or \
            any(type(v) is not bool and (type(v) is not str or len(v) > 200) for v in value):
        raise _bad("criteria list")
    return [v if type(v) is bool else safe_text(v) for v in value]


def _load_reply(value: Any) -> dict[str, Any]:
    if type(value) is not dict or value.keys() != {"class_name", "max_turns", "methods", "action_format"}:
        raise _bad("load reply")
    if value["action_format"] not in ACTION_FORMATS:
        raise _bad("action format")
    turns = value["max_turns"]
    if turns is not None and (type(turns) is not int or turns < 1):
        raise _bad("max_turns")
    methods = value["methods"]
    if type(methods) is not list or not set(methods) <= _OPTIONAL_METHODS:
        raise _bad("method list")
    return {"class_name": _text(value["class_name"], "class name", 1000), "max_turns": turns,
            "methods": list(methods), "action_format": value["action_format"]}


def check_value(op: str, method: str | None, value: Any, limits: Limits) -> Any:
    """The checked value of a successful reply to ``op`` (``method`` for ``call``)."""
    if op == "load":
        return _load_reply(value)
    if op in ("reset", "step", "tool", "tools"):
        return _observation_reply(value, limits, moved=op != "reset")
    if op == "ping":
        if value != "pong":
            raise _bad("ping reply")
        return value
    if op != "call":
        raise _bad("reply to an unknown request")
    if method == "valid_actions":
        return _text_list(value, "valid_actions()", limits.menu_actions, limits.menu_chars)
    if method == "solution":
        return _text_list(value, "solution()", limits.menu_actions * 40, limits.text_chars)
    if method == "hint":
        return None if value is None else _text(value, "the hint", limits.text_chars)
    if method == "get_tools":
        return _tools(value, limits)
    return structure(value, f"{method}()", limits.structure_chars)
