"""JSON that came from someone else (a store, a suite, a baseline, a model server), bounded before it is parsed.

Python's decoder recurses once per nesting level and reads any size: a hostile document of a few kilobytes
raises RecursionError deep in the caller, and one of a few hundred megabytes takes gigabytes of memory.
``loads`` refuses both up front with ``UntrustedJSONError`` (a ValueError), so every reader of handed-over JSON
has one error to catch and one sentence to show.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deeper than anything spadegym writes (a config tree, an episode record, a tool schema) by a wide margin.
MAX_DEPTH = 64
#: Larger than any one record spadegym writes; a caller that expects more passes its own bound.
MAX_BYTES = 64 << 20

# A JSON string with its escapes: its brackets are text, not nesting.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class UntrustedJSONError(ValueError):
    """Handed-over JSON that is not JSON, or larger or deeper than the reader allows."""


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (linear time; brackets inside strings do not count).

    >>> depth('{"a": [1, {"b": "[[["}]}')
    3
    """
    deepest = level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def loads(text: str | bytes, what: str = "the data", max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES) -> Any:
    """``json.loads`` for data someone handed over: ``UntrustedJSONError`` when it is too large, too deep, not
    UTF-8 or not JSON (NaN and infinities are accepted, as Python writes them); ``what`` names it in the message.

    >>> loads('[[1]]')
    [[1]]
    >>> loads('[' * 100 + ']' * 100, "the baseline")
    Traceback (most recent call last):
    ...
    spadegym.jsondata.UntrustedJSONError: the baseline is nested 100 levels deep, more than the 64 allowed; it was not written by spadegym
    """
    size = len(text)
    if size > max_bytes:
        raise UntrustedJSONError(f"{what} holds {size:,} bytes, more than the {max_bytes:,} allowed; "
                                 "it was not written by spadegym")
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise UntrustedJSONError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    # Most documents hold fewer brackets than the bound allows: only those that could be too deep are scanned.
    if text.count("[") + text.count("{") > max_depth and (deep := depth(text)) > max_depth:
        raise UntrustedJSONError(f"{what} is nested {deep} levels deep, more than the {max_depth} allowed; "
                                 "it was not written by spadegym")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UntrustedJSONError(f"{what} is not valid JSON ({str(exc)[:80]})") from None
