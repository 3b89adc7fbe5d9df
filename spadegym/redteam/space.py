"""What a search may propose: the levels of the built-in families, and uniform draws over them.

    space = SearchSpace("full")            # every knob's ladder with its extension, every variation choice
    knobs = space.draw(rng, family)        # one level, every knob and dimension uniform over its values
    space.neighbours(family, knobs)        # one knob a step harder, or one seen dimension changed

``full`` (the default of a search) is everything a fixed target might meet: each
difficulty knob's listed levels and the family's extension past them, and every
choice of every variation dimension, the held-out ones included (no search
trains on them). ``listed`` is the families as listed: the listed knob values,
every dimension at its default (``variant`` aside). Both arms of a comparison
draw from one space: the red-team search (``search.SearchDesigner``) and the
uniform baseline (``UniformDesigner``), so a gap between them is the search's.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from ..designers.base import Candidate, DesignContext, random_state, set_random_state
from ..families import DIMENSIONS, Family, list_families
from ..level import Level, Lineage, Params
from .clusters import SEEN_DIMENSIONS, level_signature

SpaceKind = Literal["full", "listed"]
_DIMENSION = {d.name: d for d in DIMENSIONS}


class SearchSpace:
    """The knob values a search may set on each family's levels (see the module docstring)."""

    def __init__(self, kind: SpaceKind = "full", families: list[str] | None = None):
        self.kind = kind
        self.names = list(families) if families else None

    def families(self, skill: str) -> list[Family]:
        """The families of ``skill`` in the space (every family in it when none trains that skill)."""
        pool = [f for f in list_families() if self.names is None or f.name in self.names]
        return [f for f in pool if f.skill == skill] or pool

    def values(self, family: Family, name: str) -> list[Any]:
        """The values knob ``name`` may take, easiest (or default) first."""
        if name in _DIMENSION:
            choices = list(_DIMENSION[name].choices)
            return choices if self.kind == "full" or name == "variant" else choices[:1]
        ladder = family.ladder(name) if self.kind == "full" else family.knobs[name]
        return list(dict.fromkeys(ladder))

    def draw(self, rng: random.Random, family: Family) -> dict[str, Any]:
        """A level with every knob and dimension drawn uniformly from its values."""
        return {name: rng.choice(self.values(family, name)) for name in family.knobs}

    def easiest(self, family: Family, rng: random.Random) -> dict[str, Any]:
        """The family's easiest level, every dimension at its default, in a random variant."""
        return {**family.level_knobs(0), "variant": rng.choice(self.values(family, "variant"))}

    def neighbours(self, family: Family, knobs: dict[str, Any], pairs: bool = False) -> list[dict[str, Any]]:
        """The levels one change away and no easier: each difficulty knob a step up (with ``pairs``, two at
        once too), or one dimension the target sees set to another of its values."""
        full = family.check_knobs(knobs)
        ups = []
        for name in family.ladders:
            if name == "reward_shaping":
                continue  # the target never sees it
            values = self.values(family, name)
            at = values.index(full[name]) if full[name] in values else len(values)
            if at + 1 < len(values):
                ups.append({name: values[at + 1]})
        out = [{**full, **up} for up in ups]
        if pairs:
            out += [{**full, **a, **b} for i, a in enumerate(ups) for b in ups[i + 1:]]
        for name in SEEN_DIMENSIONS:
            out += [{**full, name: v} for v in self.values(family, name) if name in full and v != full[name]]
        return out


def level_key(family: str, knobs: dict[str, Any]) -> str:
    """One game to a frozen target, whatever its variant: a search proposes each once."""
    return f"{family}:{sorted(level_signature(family, knobs).items())}"


def family_candidate(family: Family, knobs: dict[str, Any], operator: str, serial: int, version: str,
                     parents: list[str] | None = None) -> Candidate:
    lineage = Lineage(parents=list(parents or []), operator=operator, designer=version, depth=1 if parents else 0)
    level = Level(family.render(knobs), skill=family.skill, params=Params(family.name, dict(knobs)), lineage=lineage)
    return Candidate(level, candidate_id=f"{operator}-{serial:05d}")


class UniformDesigner:
    """The baseline of a search: levels drawn uniformly from its space, each skill's families alike; it
    remembers nothing and learns nothing."""

    name = "uniform"
    version = "search-uniform-1"

    def __init__(self, space: SearchSpace, seed: int = 0):
        self.space, self.rng, self.serial = space, random.Random(seed), 0

    async def propose(self, context: DesignContext) -> list[Candidate]:
        out = []
        for _ in range(context.count):
            family = self.rng.choice(self.space.families(context.skill))
            self.serial += 1
            out.append(family_candidate(family, self.space.draw(self.rng, family), "uniform", self.serial,
                                        self.version))
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"serial": self.serial, "rng": random_state(self.rng)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.serial = int(state.get("serial", 0))
        if "rng" in state:
            set_random_state(self.rng, state["rng"])
