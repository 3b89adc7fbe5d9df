"""The family registry: parameterized environment generators with explicit difficulty.

A family is a game with knobs. Each difficulty knob lists its levels, easiest
first, so a difficulty level is just an index into every knob (clipped to its
last level); past the last listed level each knob continues as its family
declares (``extend``), so ``level_knobs(max_level + 2)`` is two steps past the
hardest listed level. Beside the difficulty knobs, every level has a value for
each variation dimension (``variation.DIMENSIONS``: wording, layout, action
names, menu order, start, reward structure, turn budget); the family declares
its phrase and action-word tables. ``render(knobs)`` writes a standalone
environment file: deterministic text from the knob values; the instance
randomness comes from the reset seed. ``edits.edit_space`` lists all of it.

    family = get_family("button_lock")
    source = family.render(family.level_knobs(2))
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from . import core
from .variation import CORE_PHRASES, DIMENSION_NAMES, DIMENSIONS, REPLIES, WORDINGS, Extend

#: The six skills of the paper; every family trains one of them.
SKILLS = (
    "Mathematical Reasoning",
    "Logical Deduction",
    "Spatial Reasoning",
    "Pattern Recognition",
    "Optimization",
    "Causal Inference",
)

#: The six skills of the paper's tool-use setting; every tool-use family trains one of them.
TOOL_SKILLS = (
    "API Orchestration",
    "Data Retrieval",
    "State Modification",
    "Error Recovery",
    "Tool Selection",
    "Multi-Step Workflows",
)
#: The paper's two settings and their skills: a family's skill says which setting it belongs to.
SETTINGS: dict[str, tuple[str, ...]] = {"games": SKILLS, "tool_use": TOOL_SKILLS}
ALL_SKILLS = SKILLS + TOOL_SKILLS


def setting_of(skill: str) -> str:
    """The setting a skill belongs to (``games`` for a skill of neither)."""
    return "tool_use" if skill in TOOL_SKILLS else "games"


#: Knobs every family has: the ordered ``reward_shaping`` (sparse is harder), then the variation
#: dimensions (``variant`` only changes which instances the seeds draw; see ``variation``).
COMMON_KNOBS: dict[str, list[Any]] = {
    "reward_shaping": ["partial", "sparse"],
    **{d.name: list(d.choices) for d in DIMENSIONS},
}
#: Knobs whose levels are not ordered by difficulty: ``level_knobs`` keeps their first value.
FREE_KNOBS = DIMENSION_NAMES


class FamilyError(ValueError):
    """A family name or knob value that does not exist: the message says what to use."""


@dataclass
class Family:
    """One built-in environment family."""

    name: str
    skill: str
    description: str
    env_class: type  # subclass of core.EpisodeCore; its source is rendered
    own_knobs: dict[str, list[Any]]  # family-specific knobs, levels easiest first
    imports: tuple[str, ...] = ()  # extra stdlib modules the class uses
    #: How knobs continue past their last listed level (the others stay at it): open-ended difficulty.
    extend: dict[str, Extend] = field(default_factory=dict)
    #: Observation words and phrases -> their wordings (the listed one first), chosen by ``phrasing``.
    phrases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Action words (shown wherever they appear) -> their wordings (the listed one first), chosen by ``verbs``.
    verbs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    knobs: dict[str, list[Any]] = field(init=False)

    def __post_init__(self) -> None:
        if self.skill not in ALL_SKILLS:
            raise FamilyError(f"family {self.name!r}: skill {self.skill!r} is not one of {', '.join(ALL_SKILLS)}")
        if not self.env_class.__name__.endswith("Env"):
            raise FamilyError(f"family {self.name!r}: class {self.env_class.__name__} must end in 'Env'")
        for table in (self.phrases, self.verbs):
            for word, wordings in table.items():
                if len(wordings) != WORDINGS or wordings[0] != word:
                    raise FamilyError(f"family {self.name!r}: {word!r} needs {WORDINGS} wordings, itself first")
        unknown = set(self.extend) - set(self.own_knobs)
        if unknown:
            raise FamilyError(f"family {self.name!r} extends unknown knobs {sorted(unknown)}")
        self.knobs = {**self.own_knobs, **COMMON_KNOBS}

    @property
    def setting(self) -> str:
        """``games`` or ``tool_use``: the paper's setting the family's skill belongs to."""
        return setting_of(self.skill)

    @property
    def max_level(self) -> int:
        """The hardest listed level."""
        return max(len(v) - 1 for k, v in self.knobs.items() if k not in FREE_KNOBS)

    @property
    def ladders(self) -> dict[str, list[Any]]:
        """The difficulty knobs' listed levels, easiest first (the variation dimensions left out)."""
        return {k: v for k, v in self.knobs.items() if k not in FREE_KNOBS}

    def ladder(self, knob: str) -> list[Any]:
        """A knob's values, easiest first: its listed levels, then its extension past them."""
        listed = self.knobs[knob]
        rule = getattr(self, "extend", {}).get(knob)
        return listed + rule.values(listed[-1]) if rule else list(listed)

    @property
    def max_extended_level(self) -> int:
        """The level past which no knob climbs further (every extension at its limit)."""
        return self.max_level + max((len(self.ladder(k)) - len(v) for k, v in self.ladders.items()), default=0)

    def level_knobs(self, level: int) -> dict[str, Any]:
        """Every ordered knob at index ``level`` of its ladder (clipped; past the listed levels, its
        extension); free knobs at their first value."""
        if level < 0:
            raise FamilyError(f"level must be >= 0 (0 is easiest, {self.max_level} hardest), got {level}")
        out = {}
        for k, v in self.knobs.items():
            if k in FREE_KNOBS:
                out[k] = v[0]
            elif level < len(v):
                out[k] = v[level]
            else:
                ladder = self.ladder(k)
                out[k] = ladder[min(len(ladder) - 1, len(v) - 1 + max(0, level - self.max_level))]
        return out

    def check_knobs(self, knobs: dict[str, Any]) -> dict[str, Any]:
        """Complete ``knobs`` with level-0 values and reject unknown knobs or values."""
        unknown = [k for k in knobs if k not in self.knobs]
        if unknown:
            near = difflib.get_close_matches(unknown[0], list(self.knobs), n=1)
            tip = f"did you mean {near[0]!r}? " if near else ""
            raise FamilyError(f"family {self.name!r} has no knob {unknown[0]!r}; {tip}"
                              f"knobs: {', '.join(self.knobs)}")
        out = self.level_knobs(0)
        for name, value in knobs.items():
            levels = self.knobs[name] if name in FREE_KNOBS else self.ladder(name)
            if value not in levels:
                raise FamilyError(f"knob {name!r} of family {self.name!r} cannot be {value!r}; "
                                  f"levels: {', '.join(map(str, levels))}")
            out[name] = value
        return out

    def parse_value(self, knob: str, text: str) -> Any:
        """The level of ``knob`` written as ``text`` (for ``--set knob=value``)."""
        if knob not in self.knobs:
            self.check_knobs({knob: None})  # raises the unknown-knob error
        levels = self.knobs[knob] if knob in FREE_KNOBS else self.ladder(knob)
        for value in levels:
            if str(value) == text.strip() or _same_number(value, text):
                return value
        raise FamilyError(f"knob {knob!r} of family {self.name!r} cannot be {text!r}; "
                          f"levels: {', '.join(map(str, levels))}")

    def level_index(self, knobs: dict[str, Any]) -> dict[str, int]:
        """The index of each knob value in its ladder (past the listed levels for an extended value)."""
        full = self.check_knobs(knobs)
        return {k: (self.knobs[k] if k in FREE_KNOBS else self.ladder(k)).index(v) for k, v in full.items()}

    def wording(self, knobs: dict[str, Any]) -> dict[str, str]:
        """The level's words for the family's phrases and action words (and the core's), those that change."""
        phrasing, verbs = int(knobs.get("phrasing", 0)), int(knobs.get("verbs", 0))
        table = {word: forms[phrasing] for word, forms in {**CORE_PHRASES, **self.phrases}.items()}
        table.update({word: forms[verbs] for word, forms in self.verbs.items()})
        return {word: said for word, said in table.items() if said != word}

    def render(self, knobs: dict[str, Any]) -> str:
        """The standalone environment file for these knob values (deterministic text)."""
        values = self.check_knobs(knobs)
        imports = sorted({"copy", "random", "re", *self.imports})
        header = [
            f'"""{self.env_class.TITLE}: {self.description}',
            "",
            f"Rendered by spadegym from the built-in family {self.name!r}; knobs in DIFFICULTY.",
            "Standalone: standard library only.",
            '"""',
            "",
            *(f"import {m}" for m in imports),
            "",
            f"SKILL = {self.skill!r}",
            f"DESCRIPTION = {self.description!r}",
            f"FAMILY = {self.name!r}",
            f"DIFFICULTY = {values!r}",
            f"WORDING = {self.wording(values)!r}",
            f"REPLY = {REPLIES[int(values.get('phrasing', 0))]!r}",
            "# spadegym sends the bare action; step() also reads a \\boxed{action}, as the SPADE reference sends it.",
            'ACTION_FORMAT = "plain"',
            "",
            "",
            "",
        ]
        return "\n".join(header) + _merged_class_source(core.EpisodeCore, self.env_class)


def _same_number(value: Any, text: str) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return float(text) == value
    except ValueError:
        return False


@functools.cache  # read once per class: every family's merged source reads the cores' statements again
def _statements(cls: type) -> tuple[str, tuple[tuple[str | None, str], ...]]:
    """A class's docstring and its body statements as (defined name, source text with leading comments)."""
    lines = textwrap.dedent(inspect.getsource(cls)).splitlines()
    node = ast.parse("\n".join(lines)).body[0]
    assert isinstance(node, ast.ClassDef)
    body = list(node.body)
    doc = ""
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        doc = "\n".join(lines[body[0].lineno - 1: body[0].end_lineno])
        start = body.pop(0).end_lineno
    else:
        start = node.lineno
    out = []
    for stmt in body:
        name = None
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = stmt.name
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
        out.append((name, "\n".join(lines[start: stmt.end_lineno])))
        start = stmt.end_lineno
    return doc, tuple(out)


@functools.cache  # a class's source never changes while the process runs, and reading it (inspect) is slow
def _merged_class_source(core_cls: type, cls: type) -> str:
    """One self-contained class: the family's docstring, the members of each core between ``core_cls`` and
    the family (``core.EpisodeCore``, then ``tool_core.ToolCore`` for a tool-use family) that no later one
    overrides, then its own members (static readers see reset/step/solution on the class)."""
    chain = [c for c in reversed(cls.__mro__) if c is not cls and isinstance(c, type) and issubclass(c, core_cls)]
    doc, own = _statements(cls)
    defined = {name for name, _ in own if name}
    parts = [f"class {cls.__name__}:", doc]
    layers = [_statements(c)[1] for c in chain]
    for i, members in enumerate(layers):
        later = {name for layer in layers[i + 1:] for name, _ in layer if name} | defined
        parts += [text for name, text in members if name not in later]
    parts += [text for _, text in own]
    return "\n".join(p for p in parts if p).rstrip() + "\n"


_REGISTRY: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add a family; names are unique."""
    if family.name in _REGISTRY:
        raise FamilyError(f"family {family.name!r} is already registered")
    _REGISTRY[family.name] = family
    return family


def get_family(name: str) -> Family:
    """The registered family ``name``; unknown names suggest the nearest ones."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    near = difflib.get_close_matches(name, list(_REGISTRY), n=3, cutoff=0.5)
    tip = f"did you mean {', '.join(repr(n) for n in near)}? " if near else ""
    raise FamilyError(f"unknown family {name!r}; {tip}run `spadegym families` to list them.")


def new_environment(name: str, level: int | str = 0, overrides: dict[str, str] | None = None,
                    seed: int | None = None) -> tuple[Family, dict[str, Any], str]:
    """Render one environment file: ``level`` (an index, ``"max"`` for the hardest listed one; past it,
    the family's extension up to ``max_extended_level``), then single-knob overrides.

    ``overrides`` maps knob names to values as written on a command line
    (``{"size": "5"}``); ``seed`` picks the ``variant`` knob unless it is overridden.
    Returns the family, the knob values used, and the source.
    """
    family = get_family(name)
    if isinstance(level, str):
        text = level.strip().lower()
        if text == "max":
            level = family.max_level
        elif text.isdigit():
            level = int(text)
        else:
            raise FamilyError(f"level must be a number from 0 to {family.max_level} or 'max', got {level!r}")
    if level > family.max_extended_level:
        raise FamilyError(f"family {name!r} has levels 0 to {family.max_level} and extends to "
                          f"{family.max_extended_level}; got {level} (use 'max' for the hardest listed level)")
    knobs = family.level_knobs(level)
    if seed is not None:
        variants = family.knobs["variant"]
        knobs["variant"] = variants[seed % len(variants)]
    for knob, text in (overrides or {}).items():
        knobs[knob] = family.parse_value(knob, text)
    knobs = family.check_knobs(knobs)
    return family, knobs, family.render(knobs)


def list_families(skill: str | None = None, setting: str | None = None) -> list[Family]:
    """All registered families (optionally of one skill, or of one setting: ``games`` or ``tool_use``),
    sorted by skill then name."""
    fams = [f for f in _REGISTRY.values()
            if (skill is None or f.skill == skill) and (setting is None or f.setting == setting)]
    return sorted(fams, key=lambda f: (ALL_SKILLS.index(f.skill), f.name))
