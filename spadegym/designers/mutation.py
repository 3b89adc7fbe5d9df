"""The mutation designer: ACCEL-style edits of built-in family levels, no model needed.

Each proposal either draws a fresh level (``new``) or edits a parent from the
level buffer. Parents are picked by rank of the designer reward they earned
(P ~ (1/rank)^(1/T), as in PLR/ACCEL). The edit operators change:

- task parameters:     ``harder`` / ``easier`` move one difficulty knob one level (``harder``
                       moves every one at once for a level the agent is done with);
- initial conditions:  ``variant`` redraws the ``variant`` knob (which instances seeds map to);
- reward structure:    ``reshape`` flips ``reward_shaping`` between sparse and partial.

With ``climb`` (a red-team search), edits only make a parent harder: one
difficulty knob a step up, or two at once. A search's parents are levels the
target lost some plays of, and a failure rate that rises with stacked
difficulty is a gradient toward a corner where it fails for good.

Edits follow the parent's no-hint win rate (``directed``): a level the agent
has outgrown (above ``band``, 0.6) is only made harder, one it cannot do
(below 0.2) only easier, one inside the band either way (or as
another variant, which keeps its difficulty). Undirected
edits around a frontier level are symmetric, so difficulty only drifts by
chance; directed ones climb as the agent masters levels, as ACCEL's
complexity-adding edits do. With ``balance_families``, a family whose levels
the agent has all outgrown or had its plays of (one above the band or
retired, see ``BufferConfig.retire_after``, and none inside it) gets the
skill's next slot, and a harder edit of one of those levels.

How often each operator is used adapts to the designer rewards it earns: a
gradient bandit (Sutton & Barto, 2.8) keeps a preference per operator, the
policy is softmax(preferences) mixed with a uniform floor, and each reward
``r`` moves the chosen operator's preference by ``lr * (r - baseline) * (1 - p)``
(the others by ``-lr * (r - baseline) * p``), the baseline being a running mean
of rewards. Preferences are global by default, or kept per skill.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ..families import FREE_KNOBS, Family, FamilyError, get_family, list_families
from .base import (
    Candidate,
    DesignContext,
    Feedback,
    Level,
    LevelSummary,
    Lineage,
    Params,
    random_state,
    set_random_state,
)

VERSION = "mutation-1"
OPERATORS = ("new", "harder", "easier", "variant", "reshape")
#: Knobs that ``harder``/``easier`` leave alone (they have their own operators).
_UNORDERED = (*FREE_KNOBS, "reward_shaping")


class MutationConfig(BaseModel):
    """Settings of the mutation designer (the ``mutation`` section of a run's config)."""

    model_config = {"extra": "forbid"}

    learning_rate: float = Field(0.3, gt=0, description="Step size of the operator preferences.")
    baseline_rate: float = Field(0.1, gt=0, le=1, description="How fast the reward baseline follows the rewards.")
    exploration: float = Field(0.1, ge=0, le=1, description="Share of the operator policy that stays uniform.")
    parent_temperature: float = Field(0.5, gt=0, description="Rank prioritisation of parents: lower prefers the best-scored more.")
    per_skill: bool = Field(False, description="Separate operator preferences for each skill.")
    max_attempts: int = Field(50, ge=1, description="Draws per slot before giving up on a level not proposed yet.")
    new_max_level: int = Field(0, ge=0, description="Fresh draws start at levels 0..new_max_level (ACCEL); edits climb.")
    balance_families: bool = Field(True, description="Each slot goes to the skill's least-proposed family, so no family is starved of levels.")
    directed: bool = Field(True, description="Edit direction follows the parent's win rate (see the module docstring).")
    band: tuple[float, float] = Field((0.2, 0.6), description="No-hint win rates below it get only easier edits, above it only harder; its top is where the band reward's plateau ends.")
    families: list[str] | None = Field(None, description="Only these built-in families (unset: every family of the skill).")
    fresh_uniform: bool = Field(False, description="Fresh draws take every knob at random (a search), not one of the family's levels.")
    novelty_draws: int = Field(1, ge=1, description="A fresh draw is the most novel of this many (farthest from every level of its family proposed so far: novelty search); 1 = a plain draw.")
    climb: bool = Field(False, description="Edits only make a level harder, one difficulty knob a step up or two at once (a search climbing the target's failure rate; ignores ``directed``).")
    min_novelty: float = Field(0.0, ge=0, le=1, description="Levels closer than this to one already proposed are not proposed (see ``novelty``); above 0, never the same difficulty twice: a family with none left yields its slot, a skill with none left proposes fewer (a search).")

    @field_validator("families")
    @classmethod
    def _known_families(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            get_family(name)  # an unknown name (a typo would otherwise mean every family) names the nearest one
        return value


@dataclass
class OperatorStats:
    """The bandit state for one scope (global or one skill): plain JSON data."""

    preferences: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0.0))
    baseline: float = 0.0
    uses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0))
    reward_sum: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0.0))


class MutationDesigner:
    """Proposes built-in family levels by mutating the best parents; learns which edits pay."""

    name = "mutation"

    def __init__(self, seed: int = 0, config: MutationConfig | dict[str, Any] | None = None,
                 families: list[Family] | None = None):
        self.config = MutationConfig.model_validate(config or {})
        # Its own families (an imported task's, say) instead of the built-in registry's.
        self.families = {f.name: f for f in families} if families else None
        self.rng = random.Random(seed)
        self.serial = 0
        self.stats: dict[str, OperatorStats] = {}
        self.pending: dict[str, list[str]] = {}  # candidate id -> [operator, scope]
        self.proposed: dict[str, int] = {}  # family -> levels proposed (family balance)
        self.visited: dict[str, list[list[float]]] = {}  # family -> knob positions of its levels proposed (novelty)

    # -- the operator policy -------------------------------------------------
    def _scope(self, skill: str) -> str:
        return skill if self.config.per_skill else "global"

    def _stats(self, scope: str) -> OperatorStats:
        return self.stats.setdefault(scope, OperatorStats())

    def operator_probabilities(self, skill: str = "", allowed: tuple[str, ...] = OPERATORS) -> dict[str, float]:
        """The current policy over ``allowed`` operators (softmax of preferences + uniform floor)."""
        return self._policy(self._scope(skill), allowed)

    def _policy(self, scope: str, allowed: tuple[str, ...] = OPERATORS) -> dict[str, float]:
        prefs = self._stats(scope).preferences
        top = max(prefs[o] for o in allowed)
        exp = {o: math.exp(prefs[o] - top) for o in allowed}
        total = sum(exp.values())
        eps = self.config.exploration
        return {o: (1 - eps) * exp[o] / total + eps / len(allowed) for o in allowed}

    def update(self, feedback: list[Feedback]) -> None:
        """Move operator preferences toward the operators whose levels earned more reward."""
        for earned in feedback:
            op, scope = self.pending.pop(earned.candidate_id, [earned.operator, "global"])
            if op not in OPERATORS:
                continue  # not one of ours (e.g. a candidate from another designer)
            stats = self._stats(scope)
            probs = self._policy(scope)
            advantage = earned.reward - stats.baseline
            for o in OPERATORS:
                step = (1 - probs[o]) if o == op else -probs[o]
                stats.preferences[o] += self.config.learning_rate * advantage * step
            stats.baseline += self.config.baseline_rate * (earned.reward - stats.baseline)
            stats.uses[op] += 1
            stats.reward_sum[op] += earned.reward

    # -- proposals -------------------------------------------------------------
    async def propose(self, context: DesignContext) -> list[Candidate]:
        families = _allowed(self._families(context.skill), self.config.families)
        parents = self._usable_parents(context, {f.name for f in families})
        taken = {self._level_key(p.family, p.knobs) for p in _all_levels(context) if p.family}
        out: list[Candidate] = []
        for _ in range(context.count):
            cand = self._one(context, families, parents, taken)
            if cand is not None:
                taken.add(_key(cand.family, cand.knobs))
                out.append(cand)
        return out

    def _families(self, skill: str) -> list[Family]:
        """The families of ``skill`` it draws from (all of its families when none trains that skill)."""
        if self.families is None:
            return list_families(skill) or list_families()
        return [f for f in self.families.values() if f.skill == skill] or list(self.families.values())

    def _family(self, name: str) -> Family:
        if self.families is None:
            return get_family(name)
        if name not in self.families:
            raise FamilyError(f"unknown family {name!r}")
        return self.families[name]

    def _level_key(self, family: str, knobs: dict[str, Any]) -> str:
        """The key of a stored level, its knobs completed the way ``render`` completes them."""
        try:
            return _key(family, self._family(family).check_knobs(knobs))
        except FamilyError:
            return _key(family, knobs)

    def _usable_parents(self, context: DesignContext, names: set[str]) -> list[LevelSummary]:
        usable = []
        for p in context.parents:
            if not p.family or p.family not in names:
                continue
            try:
                self._family(p.family).check_knobs(p.knobs)
            except FamilyError:
                continue  # a level rendered by an older family version
            usable.append(p)
        return sorted(usable, key=lambda p: -p.score)

    def _pick_parent(self, parents: list[LevelSummary]) -> LevelSummary:
        # Rank prioritisation (PLR): weight (1/rank)^(1/T).
        weights = [(1.0 / (rank + 1)) ** (1.0 / self.config.parent_temperature) for rank in range(len(parents))]
        return self.rng.choices(parents, weights=weights)[0]

    def _one(self, context: DesignContext, families: list[Family], parents: list[LevelSummary],
             taken: set[str]) -> Candidate | None:
        balanced = self.config.balance_families
        found = self._attempt(context, families, parents, taken, balanced)
        if found is None and balanced:  # every level near the least-proposed families is taken: any family
            found = self._attempt(context, families, parents, taken, False)
        return found

    def _attempt(self, context: DesignContext, families: list[Family], parents: list[LevelSummary],
                 taken: set[str], balanced: bool) -> Candidate | None:
        outgrown = self._outgrown(families, parents) if balanced else []
        for _ in range(self.config.max_attempts):
            pool, pool_parents = families, parents
            if balanced:
                candidates = outgrown or families
                fewest = min(self.proposed.get(f.name, 0) for f in candidates)
                pool = [self.rng.choice([f for f in candidates if self.proposed.get(f.name, 0) == fewest])]
                pool_parents = [p for p in parents if p.family == pool[0].name]
                if outgrown:  # grow from the levels it has outgrown
                    pool_parents = [p for p in pool_parents if self._direction(p) > 0]
            parent = self._pick_parent(pool_parents) if pool_parents else None
            edits = {} if parent is None else _climbs(self._family(parent.family), parent.knobs) if self.config.climb \
                else _edits(self._family(parent.family), parent.knobs, self._direction(parent))
            allowed = ("new", *(o for o in OPERATORS if edits.get(o)))
            if outgrown and len(allowed) > 1:
                allowed = allowed[1:]  # a fresh draw starts at the easiest levels, which it has outgrown
            probs = self.operator_probabilities(context.skill, allowed)
            op = self.rng.choices(list(probs), weights=list(probs.values()))[0]
            if op == "new" or parent is None:
                family = self.rng.choice(pool)
                if self.config.fresh_uniform:
                    draws = [{k: self.rng.choice(v) for k, v in family.knobs.items()}
                             for _ in range(self.config.novelty_draws)]
                    knobs = max(draws, key=lambda d: self.novelty(family, d))  # the first of equals
                else:
                    knobs = family.level_knobs(self.rng.randint(0, min(family.max_level, self.config.new_max_level)))
                    knobs["variant"] = self.rng.choice(family.knobs["variant"])
                lineage = Lineage(parents=[], operator="new", designer=VERSION, depth=0)
                detail: dict[str, Any] = {"level": knobs}
            else:
                family = self._family(parent.family)
                patch = self.rng.choice(edits[op])
                start = family.check_knobs(parent.knobs)
                knobs = {**start, **patch}
                lineage = Lineage(parents=[parent.env_id], operator=op, designer=VERSION, depth=parent.depth + 1)
                detail = {"edit": patch, "from": {k: start[k] for k in patch}, "parent_score": parent.score}
            if _key(family.name, knobs) in taken or self.novelty(family, knobs) < self.config.min_novelty:
                continue
            return self._candidate(family, knobs, lineage, context.skill, probs, detail)
        return None

    def novelty(self, family: Family, knobs: dict[str, Any]) -> float:
        """Distance (mean over difficulty knobs, each scaled to [0, 1]) to the nearest level of the
        family proposed so far; 1 when it has none."""
        point = _position(family, knobs)
        return min((sum(abs(a - b) for a, b in zip(point, seen)) / max(1, len(point))
                    for seen in self.visited.get(family.name, [])), default=1.0)

    def _candidate(self, family: Family, knobs: dict[str, Any], lineage: Lineage, skill: str,
                   probs: dict[str, float], detail: dict[str, Any]) -> Candidate:
        self.serial += 1
        self.proposed[family.name] = self.proposed.get(family.name, 0) + 1
        self.visited.setdefault(family.name, []).append(_position(family, knobs))
        cid = f"mut-{self.serial:05d}-{self.rng.getrandbits(32):08x}"
        self.pending[cid] = [lineage.operator, self._scope(skill)]
        meta = {"operator_probabilities": {o: round(p, 4) for o, p in probs.items()}, **detail}
        level = Level(family.render(knobs), skill=family.skill, params=Params(family.name, dict(knobs)), lineage=lineage)
        return Candidate(level, candidate_id=cid, meta=meta)

    def _outgrown(self, families: list[Family], parents: list[LevelSummary]) -> list[Family]:
        """Families whose levels the agent has outgrown: one above the band (or retired), none inside it.

        Their slots come first (with ``directed``): replay gives every family its
        share of plays, and a family without a frontier level spends its share on
        levels it has mastered until the designer makes a harder one.
        """
        if not self.config.directed:
            return []
        out = []
        for family in families:
            directions = {self._direction(p) for p in parents if p.family == family.name}
            if 1 in directions and 0 not in directions:
                out.append(family)
        return out

    def _direction(self, parent: LevelSummary) -> int:
        """+1: only harder edits; -1: only easier; 0: either (the parent is in the band, or undirected).

        A retired parent (it has had its plays) counts as outgrown unless it is below the band.
        """
        low, high = self.config.band
        if not self.config.directed:
            return 0
        if parent.win_rate < low:
            return -1
        return 1 if parent.win_rate > high or parent.retired else 0

    # -- resume ----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "config": self.config.model_dump(),
            "serial": self.serial,
            "rng": random_state(self.rng),
            "stats": {s: st.__dict__.copy() for s, st in self.stats.items()},
            "pending": {k: list(v) for k, v in self.pending.items()},
            "proposed": dict(self.proposed),
            "visited": {k: [list(p) for p in v] for k, v in self.visited.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.config = MutationConfig.model_validate(state.get("config", {}))
        self.serial = int(state.get("serial", 0))
        if "rng" in state:
            set_random_state(self.rng, state["rng"])
        self.stats = {s: OperatorStats(**st) for s, st in state.get("stats", {}).items()}
        self.pending = {k: list(v) for k, v in state.get("pending", {}).items()}
        self.proposed = {k: int(v) for k, v in state.get("proposed", {}).items()}
        self.visited = {k: [list(p) for p in v] for k, v in state.get("visited", {}).items()}



def _edits(family: Family, knobs: dict[str, Any], direction: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Every edit (a patch of knob values) each operator can make to this level, in ``direction`` (0: any).

    Inside the band (0) ``harder`` and ``easier`` move one difficulty knob one step, to
    look around the frontier. For a level the agent has outgrown or had its plays
    of (+1), ``harder`` moves every difficulty knob one step at once: one step
    per knob took a family from its easiest level to the next in 4-5 edits, each
    waiting for plays, so runs trained on the easiest levels (mean difficulty
    0.1 of 1) long after the learner had stopped gaining there.
    """
    full = family.check_knobs(knobs)
    edits: dict[str, list[dict[str, Any]]] = {o: [] for o in OPERATORS if o != "new"}
    level_up: dict[str, Any] = {}
    for name, levels in family.knobs.items():
        i = levels.index(full[name])
        if name == "variant":
            if direction == 0:  # same difficulty: only worth it for a level still in the band
                edits["variant"] += [{name: v} for v in levels if v != full[name]]
        elif name == "reward_shaping":  # ordered easiest first, like every difficulty knob
            edits["reshape"] += [{name: v} for j, v in enumerate(levels)
                                 if v != full[name] and direction * (j - i) >= 0]
        elif name not in _UNORDERED:
            # Neighbouring levels may repeat a value (clipped ladders): step to the next distinct one.
            up = next((v for v in levels[i + 1:] if v != full[name]), None)
            down = next((v for v in reversed(levels[:i]) if v != full[name]), None)
            if up is not None and direction >= 0:
                edits["harder"].append({name: up})
                level_up[name] = up
            if down is not None and direction <= 0:
                edits["easier"].append({name: down})
    if direction > 0 and level_up:
        edits["harder"] = [level_up]
    return edits


def _climbs(family: Family, knobs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The ``harder`` edits of a search: every difficulty knob one step up, alone or with one other."""
    ups = _edits(family, knobs)["harder"]
    pairs = [{**a, **b} for i, a in enumerate(ups) for b in ups[i + 1:]]
    return {"harder": ups + pairs}


def _position(family: Family, knobs: dict[str, Any]) -> list[float]:
    """Where a level sits on each difficulty knob: its value's rank among the knob's distinct values, in [0, 1]."""
    full = family.check_knobs(knobs)
    out = []
    for name, levels in family.knobs.items():
        if name in FREE_KNOBS:
            continue
        distinct = list(dict.fromkeys(levels))
        out.append(distinct.index(full[name]) / max(1, len(distinct) - 1))
    return out


def _allowed(families: list[Family], names: list[str] | None) -> list[Family]:
    """``families`` limited to ``names`` (all of them when ``names`` is None, or when none is left)."""
    kept = [f for f in families if not names or f.name in names]
    return kept or families


def _key(family: str | None, knobs: dict[str, Any]) -> str:
    return f"{family}:{json.dumps(knobs, sort_keys=True, default=str)}"


def _all_levels(context: DesignContext) -> list[LevelSummary]:
    return [*context.parents, *context.frontier, *context.mastered, *context.hopeless]
