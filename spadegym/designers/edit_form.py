"""The edit a model designer replies with: a small structured change of a parent level.

    form = EditForm.of(edit_space("grid_maze"), parent_knobs)
    form.example()        # '{"operator": "harder", "changes": {"level": 2}}'
    form.schema()         # the JSON schema of every allowed reply (response_format on OpenAI-compatible servers)
    edit = form.parse(reply_text)  # a LevelEdit, or EditRefused with its refusal kind
    child = edit.knobs    # the parent's knobs with the changes applied

An edit names an operator and the values it sets:

    harder   difficulty knobs to harder values (right of the current one on the knob's ladder, its extension included)
    easier   difficulty knobs to easier values
    vary     variation dimensions (wording, layout, action names, menu order, start, instances, step cost, turn
             budget) to another training choice; the difficulty stays

Beside the knobs, ``harder`` and ``easier`` may set ``level``: every difficulty
knob at once to one of the family's levels (listed or extended) that is all
harder, or all easier, than the parent. One choice then moves a whole level, as
a curriculum steps, where a knob at a time moves a small model's edits too little
to leave a level that is far out of the band; knobs named beside it override it.

The allowed values come from the family's edit space (``families.edits``) in its
training form: no reply can reach a held-out choice. Parsing is lenient about
form (a fenced block, single quotes, trailing commas, the knobs at the top level,
``"7"`` for 7, ``size=7`` pairs) and strict about content: a name or value
outside the space is refused, and so is an edit that changes nothing. A reply
whose operator disagrees with its changes keeps the changes and is labelled by
what they do.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..envfile import strip_thinking
from ..families.edits import EditSpace
from ..jsondata import UntrustedJSONError, loads

OPERATORS = ("harder", "easier", "vary")
#: Refusal kinds of an edit reply (the loop counts them apart from the gate's categories).
MALFORMED = "malformed_edit"  # no edit could be read from the reply
OUT_OF_SPACE = "edit_out_of_space"  # a name or value the family's training edit space does not allow
NO_CHANGE = "no_change"  # the edit leaves the level as it was
REFUSALS = (MALFORMED, OUT_OF_SPACE, NO_CHANGE)

#: The pseudo knob of a whole-level move (see the module docstring).
LEVEL = "level"
_CHANGE_KEYS = ("changes", "change", "set", "knobs", "edit", "values")
_OPERATOR_KEYS = ("operator", "op", "operation", "action")
#: The longest object a reply's edit is read from: an edit is a few names and values, and a model's reply is
#: untrusted, so a longer one is never handed to the JSON decoder or Python's literal parser.
EDIT_CHARS = 1 << 16


@dataclass
class LevelEdit:
    """A parsed edit: the operator its changes amount to, the changes, and the child level's knobs."""

    operator: str
    changes: dict[str, Any]
    knobs: dict[str, Any]
    named_operator: str | None = None  # what the reply called it, when that differs
    level: int | None = None  # the level the reply moved every difficulty knob to, if it named one


@dataclass
class EditRefused:
    """A reply that is no usable edit: its refusal kind and one sentence saying why."""

    kind: str
    reason: str


@dataclass(frozen=True)
class EditForm:
    """What a designer may reply to edit one parent level: per operator, each name it may set and the values."""

    family: str
    knobs: dict[str, Any]  # the parent's knobs, complete
    options: dict[str, dict[str, list[Any]]]  # operator -> name -> allowed new values (the space's order)
    order: tuple[str, ...] = field(default=())  # every name in the space's order
    max_changes: int = 3
    levels: dict[int, dict[str, Any]] = field(default_factory=dict)  # a level the form offers -> its knobs
    own_level: int | None = None  # the family level the parent is, if its knobs are one's

    @staticmethod
    def _levels(space: EditSpace, full: dict[str, Any]) -> tuple[list[int], list[int], dict[int, dict[str, Any]],
                                                                 int | None]:
        """(harder levels, easier levels nearest first, their knobs, the parent's own level if it is one): the
        family's levels whose every knob is at or past the parent's one way, and one knob strictly (a level with
        knobs both ways is no one operator's)."""
        harder, easier, knobs_of, seen, own = [], [], {}, set(), None
        for level in range(space.max_extended_level + 1):
            knobs = {name: value for name, value in space.level(level).items() if name in space.knobs}
            key = tuple(knobs.items())
            if key in seen:  # an extension past every ladder's end repeats the last level
                continue
            seen.add(key)
            moves = [space.knobs[n].values.index(v) - space.knobs[n].values.index(full[n]) for n, v in knobs.items()]
            if all(m >= 0 for m in moves) and any(m > 0 for m in moves):
                harder.append(level)
            elif all(m <= 0 for m in moves) and any(m < 0 for m in moves):
                easier.insert(0, level)
            else:
                own = level if own is None and not any(moves) else own
                continue
            knobs_of[level] = knobs
        return harder, easier, knobs_of, own

    @classmethod
    def of(cls, space: EditSpace, knobs: dict[str, Any], max_changes: int = 3,
           operators: tuple[str, ...] | None = None) -> EditForm:
        """The form of ``space``'s training edits of the level ``knobs``; only ``operators``' where given (every
        operator's when none of those has an edit to offer, as at a family's easiest level)."""
        full = space.check(knobs, held_out=True)
        options: dict[str, dict[str, list[Any]]] = {op: {} for op in OPERATORS}
        whole = LEVEL not in space.knobs and LEVEL not in space.dimensions
        harder, easier, levels, own = cls._levels(space, full) if whole else ([], [], {}, None)
        if harder:
            options["harder"][LEVEL] = harder
        if easier:
            options["easier"][LEVEL] = easier
        for name, knob in space.knobs.items():
            values = knob.values
            i = values.index(full[name])
            if values[i + 1:]:
                options["harder"][name] = values[i + 1:]
            if values[:i]:
                options["easier"][name] = list(reversed(values[:i]))  # nearest first
        for name in space.dimensions:
            others = [c for c in space.allowed(name) if c != full[name]]
            if others:
                options["vary"][name] = others
        options = {op: names for op, names in options.items() if names}
        if operators and any(op in options for op in operators):
            options = {op: names for op, names in options.items() if op in operators}
        return cls(space.family, full, options,
                   tuple([*([LEVEL] if whole else []), *space.knobs, *space.dimensions]), max_changes,
                   {lv: k for lv, k in levels.items() if any(lv in names.get(LEVEL, []) for names in options.values())},
                   own)

    # -- what the model is shown and held to ------------------------------------------
    @property
    def operators(self) -> list[str]:
        return list(self.options)

    def reply(self, operator: str, changes: dict[str, Any]) -> str:
        """The canonical text of an edit (what the grammar and the example produce)."""
        ordered = {name: changes[name] for name in self.order if name in changes}
        return json.dumps({"operator": operator, "changes": ordered})

    def example(self) -> str:
        """A valid reply: the first value of the first name of the first operator."""
        op = self.operators[0]
        name, values = next(iter(self.options[op].items()))
        return self.reply(op, {name: values[0]})

    def schema(self) -> dict[str, Any]:
        """The JSON schema of every allowed reply: one branch per operator, each name's values as an enum."""
        branches = [{
            "type": "object",
            "properties": {
                "operator": {"type": "string", "enum": [op]},
                "changes": {"type": "object", "properties": {name: {"enum": list(values)} for name, values in names.items()},
                            "additionalProperties": False, "minProperties": 1,
                            "maxProperties": min(self.max_changes, len(names))},
            },
            "required": ["operator", "changes"], "additionalProperties": False,
        } for op, names in self.options.items()]
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    # -- reading a reply ----------------------------------------------------------------
    def parse(self, text: str) -> LevelEdit | EditRefused:
        """The edit in ``text``, or why there is none (see the module docstring)."""
        found = _read(strip_thinking(text or ""), self.order)
        if found is None:
            return EditRefused(MALFORMED, "the reply held no edit: write one JSON object like " + self.example())
        named, raw = found
        changes: dict[str, Any] = {}
        level = None
        for key, value in sorted(raw.items(), key=lambda item: _name(item[0], self.order) != LEVEL):
            name = _name(key, self.order)
            if name is None:
                return EditRefused(OUT_OF_SPACE, f"{key!r} is no knob or variation of {self.family}; "
                                                 f"use one of {', '.join(self.order)}.")
            if name == LEVEL:  # first, so that knobs named beside it override it
                level = next((lv for lv in self.levels if _same(value, lv)), None)
                if level is None:
                    return EditRefused(OUT_OF_SPACE, f"level = {value!r} is not one of {self.family}'s levels "
                                                     f"all harder or all easier than this one; allowed: "
                                                     f"{', '.join(map(str, self.levels)) or 'none'}.")
                changes.update({k: v for k, v in self.levels[level].items() if not _same(v, self.knobs[k])})
                continue
            allowed = [v for names in self.options.values() for v in names.get(name, [])]
            if _same(value, self.knobs[name]):
                changes.pop(name, None)  # set to what it is already: no part of the edit
                continue
            match = next((v for v in allowed if _same(value, v)), None)
            if match is None:
                return EditRefused(OUT_OF_SPACE, f"{name} = {value!r} is not allowed in {self.family}'s training "
                                                 f"edits; allowed: {', '.join(map(repr, allowed)) or 'none'}.")
            changes[name] = match
        if not changes:
            return EditRefused(NO_CHANGE, "the edit changes nothing: set at least one knob or variation to a new value.")
        operator = self._operator(changes)
        return LevelEdit(operator, changes, {**self.knobs, **changes},
                         named_operator=named if named and named != operator else None, level=level)

    def _operator(self, changes: dict[str, Any]) -> str:
        """What the changes do: harder, easier, vary (variation only) or mixed (knobs both ways)."""
        ups = any(name in self.options.get("harder", {}) and value in self.options["harder"][name]
                  for name, value in changes.items())
        downs = any(name in self.options.get("easier", {}) and value in self.options["easier"][name]
                    for name, value in changes.items())
        if ups and downs:
            return "mixed"
        return "harder" if ups else "easier" if downs else "vary"


def _read(text: str, names: tuple[str, ...]) -> tuple[str | None, dict[str, Any]] | None:
    """(operator named, raw changes) from a reply: a JSON-ish object, else ``name=value`` pairs; None if neither."""
    obj = _object(text)
    if isinstance(obj, dict):
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        operator = next((str(lowered[k]).strip().lower() for k in _OPERATOR_KEYS if k in lowered), None)
        nested = next((lowered[k] for k in _CHANGE_KEYS if isinstance(lowered.get(k), dict)), None)
        if nested is None and operator is None and len(lowered) == 1:  # {"harder": {"size": 5}}
            (key, value), = lowered.items()
            if key in OPERATORS and isinstance(value, dict):
                operator, nested = key, value
        changes = nested if nested is not None else {
            k: v for k, v in obj.items() if str(k).strip().lower() not in (*_OPERATOR_KEYS, *_CHANGE_KEYS)}
        if changes:
            return operator, dict(changes)
    pairs = {m.group(1): m.group(2).strip("\"'") for m in re.finditer(
        r"\b(" + "|".join(map(re.escape, names)) + r")\b\s*[:=]\s*(\"[^\"]*\"|'[^']*'|[\w.+-]+)", text, re.I)}
    if pairs:
        operator = next((op for op in OPERATORS if re.search(rf"\b{op}\b", text, re.I)), None)
        return operator, pairs
    return None


def _object(text: str) -> Any:
    """The outermost ``{...}`` of ``text`` read as JSON, then as a Python literal, then without trailing commas."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    chunk = text[start:end + 1]
    if len(chunk) > EDIT_CHARS:
        return None
    for attempt in (chunk, re.sub(r",\s*([}\]])", r"\1", chunk)):
        try:
            return loads(attempt, "the edit")
        except UntrustedJSONError:
            pass
        try:
            return ast.literal_eval(attempt)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return None


def _name(key: Any, names: tuple[str, ...]) -> str | None:
    """The space's name that ``key`` means (case, spaces and hyphens aside)."""
    norm = re.sub(r"[\s-]+", "_", str(key).strip().lower())
    return norm if norm in names else None


def _same(value: Any, allowed: Any) -> bool:
    """Whether a replied value means an allowed one: equal, or equal as text or as a number."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return value is allowed or str(value).strip().lower() == str(allowed).lower()
    if value == allowed:
        return True
    text = str(value).strip().strip("\"'").lower()
    if text == str(allowed).lower():
        return True
    try:
        return isinstance(allowed, (int, float)) and float(text) == float(allowed)
    except ValueError:
        return False
