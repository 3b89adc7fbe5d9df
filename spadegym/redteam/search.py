"""The red-team designer: proposes only levels whose outcome the search cannot yet tell.

It reads the search's memory (``ClusterMemory``): the minimal failures found
and the levels the target won. A level at least as hard as a known minimal
failure would only repeat it; a level no harder than a won one would most
likely be won again. Every proposal is **open**: neither of those, and not a
game proposed before. Within the open levels of a family, three ways to pick:

    fresh   a uniform draw from the space, lowered out of every known failure it would repeat
            (one knob below the failure's, or a dimension it needs changed): of 32, the one
            the target most likely fails for good, the most novel among equals
    edge    one change away from a won level (shrinking leaves many): a difficulty knob a step
            harder, or one dimension the target sees (wording, layout, line order, action names,
            menu, start, turns) changed. A failure here differs from a won level by one change,
            its cause
    climb   one or two knobs a step harder (or one dimension changed) from a level the target lost
            some plays of: a failure rate that rises with stacked difficulty points to a corner
            (conjunctions of knobs) where it fails for good

The chance the target fails a level for good (fails the hunt's plays, then its replays on
fresh seeds confirm it: a level it wins half the time fails once by chance and is then
refused) comes from the hunt's model of the target's plays (``PlayModel``: every play of a
family level, fitted per family); an edge or a climb is the option it gives the highest
chance. The way to pick is a Thompson draw over what each way yielded (a new failure 1, a
level lost only sometimes one half). A slot goes to the family of its skill picked by a
Thompson draw over what each family's proposals yielded, the same way, among those that
still have an open level; a skill with none left proposes fewer, and the search ends when
no skill has any (every failure it can reach is found).
"""

from __future__ import annotations

import random
from typing import Any

from ..designers.base import Candidate, DesignContext, Feedback, LevelSummary, random_state, set_random_state
from ..families import Family, FamilyError
from .allocate import YieldAllocator
from .clusters import SEEN_DIMENSIONS, ClusterMemory, dominates, level_features
from .predict import Judging, PlayModel
from .space import SearchSpace, family_candidate, level_key

VERSION = "search-4"
OPERATORS = ("fresh", "edge", "climb")
#: Uniform draws a fresh level is picked from.
FRESH_DRAWS = 32
#: Times a draw is lowered out of known failures before it is given up.
ESCAPES = 12


class SearchDesigner:
    """Proposes open levels of the built-in families (see the module docstring)."""

    name = "search"

    def __init__(self, space: SearchSpace, memory: ClusterMemory, seed: int = 0, model: PlayModel | None = None,
                 judging: Judging = Judging()):
        self.space, self.memory = space, memory
        self.model = model if model is not None else PlayModel()  # what the target's plays so far say
        self.judging = judging  # how the hunt judges a proposal: failed or not, and confirmed or not
        self.rng = random.Random(seed)
        self.ops = YieldAllocator(list(OPERATORS), seed=seed)
        self.family_yield = YieldAllocator([], seed=seed + 1)  # what each family's proposals yielded
        self.serial = 0
        self.taken: set[str] = set()  # games proposed (level_key)
        self.visited: dict[str, list[list[float]]] = {}  # family -> positions of its proposals (novelty)
        self.pending: dict[str, str] = {}  # candidate id -> operator
        self.pending_family: dict[str, str] = {}  # candidate id -> family
        self.batch_round = -1
        self.batch: list[tuple[str, dict[str, Any]]] = []  # this round's proposals (family, knobs)
        self.apart = False

    # -- proposals ---------------------------------------------------------------
    async def propose(self, context: DesignContext) -> list[Candidate]:
        out = []
        for _ in range(context.count):
            cand = self._one(context)
            if cand is None:
                break  # nothing open is left in this skill
            out.append(cand)
        return out

    def _one(self, context: DesignContext) -> Candidate | None:
        if context.round != self.batch_round:
            self.batch_round, self.batch = context.round, []
        by_name = {f.name: f for f in self.space.families(context.skill)}
        families = [by_name[name] for name in self.family_yield.ranked(sorted(by_name))]
        # The levels of one call are judged only after it: first look for one no harder and no easier than the
        # round's others (whichever way those go, it may still tell something new), then for any open one.
        for self.apart in (True, False):
            for family in families:
                found = self._level(family, [p for p in context.parents if p.family == family.name])
                if found is not None:
                    operator, knobs, parents = found
                    self.batch.append((family.name, knobs))
                    return self._candidate(family, knobs, operator, parents)
        return None

    def _level(self, family: Family, parents: list[LevelSummary]) -> tuple[str, dict[str, Any], list[str]] | None:
        """An open level of ``family``: (operator, knobs, parent ids), or None when it has none left."""
        options = {"climb": self._climbs(family, parents), "edge": self._edges(family)}
        live = [op for op in OPERATORS if op == "fresh" or options[op]]
        while live:
            op = self.ops.pick(live)
            if op != "fresh":  # the option the target most likely fails (ties in random order)
                shuffled = self.rng.sample(options[op], len(options[op]))
                parent_id, knobs = max(shuffled, key=lambda o: self.likely_lost(family, o[1]))
                return op, knobs, [parent_id] if parent_id else []
            knobs = self._fresh(family)
            if knobs is not None:
                return op, knobs, []
            live.remove(op)
        return None

    def open(self, family: Family, knobs: dict[str, Any]) -> bool:
        """Not proposed before, not at or above a known failure, not at or below a won level (nor, while
        ``apart``, at or above or below a level proposed this round)."""
        return (level_key(family.name, knobs) not in self.taken
                and self.memory.known_cluster(family.name, knobs) is None
                and not self.memory.passed_above(family.name, knobs)
                and not (self.apart and any(f == family.name and (dominates(f, knobs, k) or dominates(f, k, knobs))
                                            for f, k in self.batch)))

    def _climbs(self, family: Family, parents: list[LevelSummary]) -> list[tuple[str | None, dict[str, Any]]]:
        """Open levels a step or two harder than the best-scored levels it lost some plays of."""
        out: list[tuple[str | None, dict[str, Any]]] = []
        for parent in sorted(parents, key=lambda p: -p.score)[:4]:
            try:
                near = self.space.neighbours(family, parent.knobs, pairs=True)
            except FamilyError:
                continue  # a level of an older family version
            out += [(parent.env_id, k) for k in near if self.open(family, k)]
        return out

    def _edges(self, family: Family) -> list[tuple[str | None, dict[str, Any]]]:
        """Open levels one change above a level the target won."""
        won = [knobs for f, knobs in self.memory.passes if f == family.name]
        return [(None, k) for knobs in won for k in self.space.neighbours(family, knobs) if self.open(family, k)]

    def _fresh(self, family: Family) -> dict[str, Any] | None:
        """Of ``FRESH_DRAWS`` uniform draws, each lowered out of the failures it would repeat, the one the target
        most likely fails for good (to two decimals), the most novel among those."""
        draws = [d for d in (self._escape(family, self.space.draw(self.rng, family)) for _ in range(FRESH_DRAWS))
                 if d is not None]
        return max(draws, key=lambda d: (round(self.likely_lost(family, d), 2), self.novelty(family, d))) if draws else None

    def likely_lost(self, family: Family, knobs: dict[str, Any]) -> float:
        """The chance the target fails this level on the hunt's plays and on its confirmation's, as the model of
        its plays has it (1 while the family has too few levels played)."""
        chance = self.model.kept_chance(family.name, knobs, self.judging)
        return 1.0 if chance is None else chance

    def _escape(self, family: Family, knobs: dict[str, Any]) -> dict[str, Any] | None:
        """``knobs`` moved below every known failure it is at or above (one knob under the failure's, or a
        dimension the failure needs set otherwise); None when it cannot get out, or is not open for another reason."""
        for _ in range(ESCAPES):
            if self.open(family, knobs):
                return knobs
            key = self.memory.known_cluster(family.name, knobs)
            if key is None:
                return None  # proposed before, or no harder than a won level
            ladders, varied = level_features(family.name, self.memory.minimal[key][1])
            moves = [k for k, i in ladders.items() if i > 0] + list(varied)
            if not moves:
                return None  # the failure is the family's easiest game: every level repeats it
            name = self.rng.choice(moves)
            if name in varied:
                below = [v for v in self.space.values(family, name) if v != varied[name]]
            else:
                below = [v for v in self.space.values(family, name) if family.level_index({name: v})[name] < ladders[name]]
            knobs = {**knobs, name: self.rng.choice(below)}
        return None

    def novelty(self, family: Family, knobs: dict[str, Any]) -> float:
        """Distance (mean over knob positions) to the nearest level of the family proposed so far; 1 if none."""
        point = _position(family, knobs)
        return min((sum(abs(a - b) for a, b in zip(point, seen)) / max(1, len(point))
                    for seen in self.visited.get(family.name, [])), default=1.0)

    def _candidate(self, family: Family, knobs: dict[str, Any], operator: str, parents: list[str]) -> Candidate:
        self.serial += 1
        self.taken.add(level_key(family.name, knobs))
        self.visited.setdefault(family.name, []).append(_position(family, knobs))
        cand = family_candidate(family, knobs, operator, self.serial, VERSION, parents)
        self.pending[cand.candidate_id] = operator
        self.pending_family[cand.candidate_id] = family.name
        return cand

    # -- learning which way pays --------------------------------------------------------
    def update(self, feedback: list[Feedback]) -> None:
        """What each proposal yielded (``details['found']``: a new failure 1, lost only some plays 1/2)."""
        for earned in feedback:
            found = float(earned.details.get("found", 0.0))
            op = self.pending.pop(earned.candidate_id, None)
            if op in OPERATORS:
                self.ops.record(op, found)
            if (family := self.pending_family.pop(earned.candidate_id, None)) is not None:
                self.family_yield.record(family, found)

    def state_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "serial": self.serial, "rng": random_state(self.rng),
                "ops": self.ops.state(), "taken": sorted(self.taken),
                "visited": self.visited, "pending": dict(self.pending), "families": self.family_yield.state(),
                "pending_family": dict(self.pending_family)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.serial = int(state.get("serial", 0))
        if "rng" in state:
            set_random_state(self.rng, state["rng"])
        self.ops.load(state.get("ops", {}))
        self.taken = set(state.get("taken", []))
        self.visited = {k: [list(p) for p in v] for k, v in state.get("visited", {}).items()}
        self.pending = dict(state.get("pending", {}))
        self.family_yield.load(state.get("families", {}))
        self.pending_family = dict(state.get("pending_family", {}))


def _position(family: Family, knobs: dict[str, Any]) -> list[float]:
    """A level's place for novelty: each knob's ladder index over the ladder's length, and 1 per varied dimension."""
    ladders, varied = level_features(family.name, knobs)
    return [i / max(1, len(family.ladder(k)) - 1) for k, i in ladders.items()] + \
        [float(k in varied) for k in SEEN_DIMENSIONS]
