"""Non-adaptive designers: the baselines the adaptive curriculum is measured against.

``uniform``     fresh uniform draws over every family's listed knob values and the training choices of
                every variation dimension (domain randomisation over the training edit space)
``fixed:easy``  a fixed pool: every family at its easiest level
``fixed:all``   a fixed pool: every family at every level (the paper's fixed-environment baseline)
``staged``      a hand-written schedule: every family at level 0 in the first stage of the run, then
                level 1, and so on (one stage per level, in equal shares of the run's rounds); the
                classic alternative to an adaptive curriculum, which needs the budget up front

A fixed pool is proposed once, in order; afterwards the loop replays it from the
level buffer (give the buffer ``replay_fraction=1`` and ``min_fill`` = pool size,
as ``baseline_overrides`` does). None of them learns from its rewards.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ..families import list_families
from ..families.edits import edit_space
from ..specs import Spec, form
from .base import Candidate, DesignContext, Level, Lineage, Params, random_state, set_random_state

#: The kinds of the designer registry (``DESIGNERS``) a sampler draws for: their specs are read there, and a
#: sampler is given the parsed ``Spec``.
SAMPLER_KINDS = ("uniform", "fixed", "staged")
#: The pools of ``fixed:POOL``.
FIXED_POOLS = ("easy", "all")
VERSION = "sampler-1"


def _sampler(spec: Spec) -> bool:
    return spec.kind in SAMPLER_KINDS and (spec.kind != "fixed" or spec.argument in FIXED_POOLS)


def _pool(kind: str, exclude: Sequence[str] = ()) -> list[tuple[str, dict[str, Any]]]:
    pool = []
    for family in list_families():
        if family.name in exclude:
            continue
        levels = [0] if kind == "easy" else range(family.max_level + 1)
        pool.extend((family.name, family.level_knobs(level)) for level in levels)
    return pool


class SamplerDesigner:
    """Proposes built-in family levels without looking at the agent."""

    def __init__(self, spec: Spec = Spec("uniform"), seed: int = 0, rounds: int | None = None,
                 families: list[str] | None = None, exclude: Sequence[str] = ()):
        if not _sampler(spec):
            raise ValueError(f"unknown sampler '{spec}'; use one of {', '.join(form('designer', k) for k in SAMPLER_KINDS)}")
        if spec.kind == "staged" and not rounds:
            raise ValueError("the staged sampler needs the run's number of rounds to lay out its stages")
        self.parsed, self.rounds = spec, rounds
        self.name = self.spec = spec.text  # its levels' operator and candidate ids
        self.families = families  # only these built-in families (None: all)
        self.exclude = tuple(exclude)  # never these (the run's unseen families)
        self.rng = random.Random(seed)
        self.pool = _pool(spec.argument, self.exclude) if spec.kind == "fixed" else []
        self.cursor = 0  # next pool item to propose (fixed pools)
        self.serial = 0

    async def propose(self, context: DesignContext) -> list[Candidate]:
        if self.pool:
            # A fixed pool ignores the requested skill: it is the same pool every run.
            items = self.pool[self.cursor:self.cursor + context.count]
            self.cursor += len(items)
        elif self.parsed.kind == "staged":
            items = [self._staged(context.skill, context.round) for _ in range(context.count)]
        else:
            items = [self._draw(context.skill) for _ in range(context.count)]
        return [self._candidate(name, knobs) for name, knobs in items]

    def _families(self, skill: str) -> list[Any]:
        families = [f for f in (list_families(skill) or list_families()) if f.name not in self.exclude]
        return [f for f in families if not self.families or f.name in self.families] or families

    def _draw(self, skill: str) -> tuple[str, dict[str, Any]]:
        # Every listed knob value and every training choice of each variation dimension (never the held-out ones).
        family = self.rng.choice(self._families(skill))
        space = edit_space(family)
        knobs = {k: self.rng.choice(v.listed) for k, v in space.knobs.items()}
        return family.name, {**knobs, **space.random_variation(self.rng)}

    def _staged(self, skill: str, round_: int) -> tuple[str, dict[str, Any]]:
        """A family of the skill at this round's stage level, in a fresh variant."""
        families = self._families(skill)
        family = self.rng.choice(families)
        stages = family.max_level + 1
        level = min(family.max_level, round_ * stages // (self.rounds or 1))  # rounds: checked at init
        knobs = family.level_knobs(level)
        knobs["variant"] = self.rng.choice(family.knobs["variant"])
        return family.name, knobs

    def _candidate(self, name: str, knobs: dict[str, Any]) -> Candidate:
        from ..families import get_family

        family = get_family(name)
        self.serial += 1
        level = Level(family.render(knobs), skill=family.skill, params=Params(name, knobs),
                      lineage=Lineage(operator=self.spec, designer=VERSION))
        return Candidate(level, candidate_id=f"{self.spec}-{self.serial:05d}")

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "serial": self.serial, "rng": random_state(self.rng)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor, self.serial = state.get("cursor", 0), state.get("serial", 0)
        if "rng" in state:
            set_random_state(self.rng, state["rng"])

    def pool_size(self) -> int:
        return len(self.pool)


def pool_overrides(size: int) -> dict[str, Any]:
    """Buffer settings that replay a pool of ``size`` levels whole and never retire it."""
    return {"capacity": max(size, 1), "replay_fraction": 1.0, "min_fill": size, "staleness_coef": 1.0,
            "balance": "none", "retire_after": 0}


def baseline_overrides(spec: Spec, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Buffer settings that make the loop play a sampler's levels as its baseline intends (a pure function of the
    parsed spec and the families left out)."""
    if spec.kind == "fixed":
        return pool_overrides(len(_pool(spec.argument, exclude)))
    return {"replay_fraction": 0.0}
