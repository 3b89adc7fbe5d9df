"""Tool calls the gate can try in a tool game, drawn from the declared schemas (host-side, no env code).

A tool game answers tool calls, not bare answers, so its probes must call its
tools: ``tool_menu`` lists calls of every declared tool with arguments drawn
from the schema (an ``enum``, else values of the declared type taken from the
text the episode showed so far: ids, names and numbers a query returned), plus
a few bare answers; ``bad_calls`` lists calls an agent may send by mistake
(arguments of the wrong type, required ones missing, an unknown tool). Every
call is JSON data whatever the schema holds (``...``, sets, tuples, nesting):
a schema the reader does not understand gives calls without arguments, never
an error.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

# Tokens of the observed text that may be argument values: quoted strings, ids and words, numbers.
_QUOTED = re.compile(r"[\"'`]([^\"'`\n]{1,40})[\"'`]")
_WORD = re.compile(r"[A-Za-z_][\w./:@-]{0,39}")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,9}(?:\.\d{1,4})?(?![\w.])")
# Most values of one kind kept from the text, calls per tool, and calls in a menu.
_MAX_WORDS = 24
_MAX_NUMBERS = 12
_CALLS_PER_TOOL = 6
_MAX_MENU = 64
# Common words that are never an argument worth trying.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "answer",
        "are",
        "as",
        "at",
        "be",
        "by",
        "call",
        "do",
        "for",
        "from",
        "give",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "reply",
        "the",
        "then",
        "this",
        "to",
        "tool",
        "tools",
        "use",
        "when",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True)
class Param:
    """One declared parameter: its name, JSON type (None when unknown), enum values, and whether required."""

    name: str
    kind: str | None
    enum: tuple[Any, ...]
    required: bool


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def tool_params(schema: Any) -> tuple[str, list[Param]] | None:
    """The tool's name and parameters as a schema declares them (OpenAI's nested form or flat); None when
    it names no tool. Anything malformed inside is skipped, never raised."""
    if not isinstance(schema, dict):
        return None
    function = schema.get("function") if isinstance(schema.get("function"), dict) else schema
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    spec = function.get("parameters")
    spec = spec if isinstance(spec, dict) else {}
    properties = spec.get("properties") if isinstance(spec.get("properties"), dict) else {}
    required_raw = spec.get("required")
    required = (
        {r for r in required_raw if isinstance(r, str)} if isinstance(required_raw, (list, tuple)) else set()
    )
    params = []
    for key, prop in properties.items():
        if not isinstance(key, str):
            continue
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type")
        if isinstance(kind, (list, tuple)):  # ["string", "null"]: the first real type
            kind = next((k for k in kind if isinstance(k, str) and k != "null"), None)
        enum = prop.get("enum")
        values = (
            tuple(v for v in enum if _json_safe(v))[:_CALLS_PER_TOOL]
            if isinstance(enum, (list, tuple))
            else ()
        )
        params.append(Param(key, kind if isinstance(kind, str) else None, values, key in required))
    return name.strip(), params


def _id_like(token: str) -> bool:
    """A token that names a record rather than reads as prose: digits, ``_``/``-``/``.``, inner capitals."""
    return any(c.isdigit() or c in "_-./:@" for c in token) or any(c.isupper() for c in token[1:])


def observed_values(texts: list[str]) -> tuple[list[str], list[int | float]]:
    """Words and numbers the episode's text showed: quoted strings and ids first, then other words, the
    newest text first within each (what a query just returned is what the next call needs)."""
    quoted: list[str] = []
    plain: list[str] = []
    numbers: list[int | float] = []
    for text in reversed(texts):
        for token in [*_QUOTED.findall(text), *_WORD.findall(text)]:
            token = token.strip().rstrip(".:,")
            if token and token.lower() not in _STOPWORDS and token not in quoted and token not in plain:
                (quoted if _id_like(token) or token in _QUOTED.findall(text) else plain).append(token)
        for raw in _NUMBER.findall(text):
            value = float(raw) if "." in raw else int(raw)
            if value not in numbers and len(numbers) < _MAX_NUMBERS:
                numbers.append(value)
    return (quoted + plain)[:_MAX_WORDS], numbers


def _candidates(param: Param, words: list[str], numbers: list[int | float]) -> list[Any]:
    """Values of the declared type a valid call may carry."""
    if param.enum:
        return list(param.enum)
    ints = [n for n in numbers if isinstance(n, int)] + [0, 1]
    if param.kind == "integer":
        return ints
    if param.kind == "number":
        return [*numbers, 0, 1]
    if param.kind == "boolean":
        return [True, False]
    if param.kind == "array":
        return [[w] for w in words[:4]] + [[]]
    if param.kind == "object":
        return [{}]
    return words or ["x"]


def _call(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def tool_menu(tools: list[Any], texts: list[str], answers: tuple[str, ...] = ()) -> list[str]:
    """Valid-looking calls of every listed tool (JSON tool-call actions), then ``answers`` and a few words
    of the text as bare answers. The same tools and texts give the same menu (seeded by the tool's name)."""
    words, numbers = observed_values(texts)
    menu: list[str] = []
    for schema in tools:
        read = tool_params(schema)
        if read is None:
            continue
        name, params = read
        rng = random.Random(f"{name}:{len(words)}:{len(numbers)}")
        pools = [(p, _candidates(p, words, numbers)) for p in params]
        for _ in range(_CALLS_PER_TOOL if params else 1):
            arguments = {
                p.name: rng.choice(pool) for p, pool in pools if pool and (p.required or rng.random() < 0.7)
            }
            action = _call(name, arguments)
            if action not in menu:
                menu.append(action)
    menu = menu[: _MAX_MENU - 8]
    for answer in [*answers, *words[:4], *(str(n) for n in numbers[:4])]:
        if answer not in menu and len(menu) < _MAX_MENU:
            menu.append(answer)
    return menu


def _wrong_type(param: Param) -> Any:
    return "not-a-number" if param.kind in ("integer", "number", "boolean") else 12345


def bad_calls(tools: list[Any], limit: int = 8) -> list[str]:
    """Calls an agent may send by mistake: each tool with arguments of the wrong type and with its required
    arguments missing, and a tool that does not exist (at most ``limit``)."""
    calls: list[str] = []
    for schema in tools:
        read = tool_params(schema)
        if read is None:
            continue
        name, params = read
        if params:
            calls.append(_call(name, {p.name: _wrong_type(p) for p in params}))
        if any(p.required for p in params):
            calls.append(_call(name, {}))
    return [*calls[: limit - 1], _call("no_such_tool", {"x": 1})]
