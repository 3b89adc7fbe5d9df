"""The edit space of a family: everything a designer (or a red team) may change about one of its levels.

    space = edit_space("grid_maze")
    level = space.check({})                           # level 0, every dimension at its default
    for edit in space.steps(level):                   # every single change a designer can make
        print(edit.name, edit.value, edit.kind)       # size 5 harder / layout equals layout / ...
    harder = space.apply(level, {"size": 7, "phrasing": 2})
    source = get_family("grid_maze").render(harder)

A level is its family plus one value per knob (a plain dict, as ``Candidate.knobs``
and the rendered file's ``DIFFICULTY`` carry it). The space has two parts:

- ``knobs``: the difficulty ladders, easiest first: the listed levels, then the
  family's extension past them (``KnobSpace.extension``: open-ended difficulty);
- ``dimensions``: the variation dimensions (``variation.DIMENSIONS``: wording,
  layout, action names, menu order, start, reward structure, turn budget), each
  with its choices and the ones held out of training.

By default the space is the *training* space: held-out choices (the edge-case
suite's slice) are refused, so a designer that edits only through it never
trains on them; ``held_out=True`` opens them (the held-out suites, a red team
probing a fixed agent). Every level it accepts renders; the validation gate
still decides whether it is feasible.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .registry import FREE_KNOBS, Family, FamilyError, get_family
from .variation import DIMENSIONS


class KnobSpace(BaseModel):
    """One difficulty knob: its listed levels (easiest first) and its values past them."""

    model_config = {"frozen": True}

    name: str
    listed: list[Any]
    extension: list[Any]

    @property
    def values(self) -> list[Any]:
        """Every value, easiest first (repeats of a clipped ladder once)."""
        return list(dict.fromkeys([*self.listed, *self.extension]))


class DimensionSpace(BaseModel):
    """One variation dimension: its choices (the default first) and those held out of training."""

    model_config = {"frozen": True}

    name: str
    kind: str  # phrasing | layout | actions | initial | reward | budget
    choices: list[Any]
    held_out: list[Any]
    description: str

    @property
    def training(self) -> list[Any]:
        return [c for c in self.choices if c not in self.held_out]


@dataclass(frozen=True)
class Edit:
    """One change of one level: set ``name`` to ``value``; ``kind`` says what it does (``harder``,
    ``easier`` for a knob; the dimension's kind for a variation)."""

    name: str
    value: Any
    kind: str

    def patch(self) -> dict[str, Any]:
        return {self.name: self.value}


class EditSpace(BaseModel):
    """What a designer may set on a level of ``family`` (see the module docstring)."""

    model_config = {"frozen": True}

    family: str
    skill: str
    description: str
    knobs: dict[str, KnobSpace]
    dimensions: dict[str, DimensionSpace]
    max_level: int  # the hardest listed level
    max_extended_level: int  # the level past which no knob climbs further

    def allowed(self, name: str, *, held_out: bool = False) -> list[Any]:
        """The values ``name`` may take (a knob's ladder with its extension; a dimension's training choices)."""
        if name in self.knobs:
            return self.knobs[name].values
        if name in self.dimensions:
            dim = self.dimensions[name]
            return list(dim.choices) if held_out else dim.training
        raise FamilyError(f"family {self.family!r} has no knob or dimension {name!r}; "
                          f"knobs: {', '.join(self.knobs)}; dimensions: {', '.join(self.dimensions)}")

    def check(self, knobs: Mapping[str, Any], *, held_out: bool = False) -> dict[str, Any]:
        """``knobs`` completed with level 0 and the default variation; a value out of the space is one sentence."""
        for name, value in knobs.items():
            values = self.allowed(name, held_out=held_out)
            if value not in values:
                what = "held out of training" if name in self.dimensions and value in self.dimensions[name].choices \
                    else "not one of its values"
                raise FamilyError(f"{name} = {value!r} is {what} for family {self.family!r}; "
                                  f"allowed: {', '.join(map(repr, values))}")
        return {**self.level(0), **knobs}

    def apply(self, knobs: Mapping[str, Any], edit: Mapping[str, Any] | Edit, *, held_out: bool = False) -> dict[str, Any]:
        """The level ``knobs`` with ``edit`` (a patch, or an ``Edit``) applied, checked against the space."""
        patch = edit.patch() if isinstance(edit, Edit) else dict(edit)
        return self.check({**knobs, **patch}, held_out=held_out)

    def split(self, knobs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A level's difficulty knobs and its variation, apart."""
        full = self.check(knobs, held_out=True)
        return ({k: v for k, v in full.items() if k in self.knobs},
                {k: v for k, v in full.items() if k in self.dimensions})

    def steps(self, knobs: Mapping[str, Any], *, held_out: bool = False) -> list[Edit]:
        """Every single change of the level: each knob one distinct value up (``harder``, into its extension)
        or down (``easier``), each dimension to each other allowed choice."""
        full = self.check(knobs, held_out=True)
        out = []
        for name, space in self.knobs.items():
            values = space.values
            i = values.index(full[name])
            if i + 1 < len(values):
                out.append(Edit(name, values[i + 1], "harder"))
            if i > 0:
                out.append(Edit(name, values[i - 1], "easier"))
        for name, dim in self.dimensions.items():
            out += [Edit(name, c, dim.kind) for c in self.allowed(name, held_out=held_out) if c != full[name]]
        return out

    def level(self, level: int) -> dict[str, Any]:
        """Every knob at ``level`` of its ladder (past ``max_level``: the extension), the default variation."""
        if level < 0:
            raise FamilyError(f"level must be >= 0 (0 is easiest, {self.max_level} hardest listed), got {level}")
        out = {}
        for name, space in self.knobs.items():
            ladder = [*space.listed, *space.extension]
            i = level if level < len(space.listed) else len(space.listed) - 1 + max(0, level - self.max_level)
            out[name] = ladder[min(i, len(ladder) - 1)]
        return {**out, **{name: dim.choices[0] for name, dim in self.dimensions.items()}}

    def random_variation(self, rng: random.Random, *, held_out: bool = False) -> dict[str, Any]:
        """A draw of every dimension among its allowed choices."""
        return {name: rng.choice(self.allowed(name, held_out=held_out)) for name in self.dimensions}


def edit_space(family: str | Family) -> EditSpace:
    """The edit space of a registered family (or of a ``Family`` value, e.g. an imported task)."""
    fam = get_family(family) if isinstance(family, str) else family
    knobs = {name: KnobSpace(name=name, listed=list(levels), extension=fam.ladder(name)[len(levels):])
             for name, levels in fam.knobs.items() if name not in FREE_KNOBS}
    dimensions = {d.name: DimensionSpace(name=d.name, kind=d.kind, choices=list(d.choices), held_out=list(d.held_out),
                                         description=d.description)
                  for d in DIMENSIONS if d.name in fam.knobs}
    return EditSpace(family=fam.name, skill=fam.skill, description=fam.description, knobs=knobs,
                     dimensions=dimensions, max_level=fam.max_level, max_extended_level=fam.max_extended_level)
