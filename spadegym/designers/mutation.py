"""The mutation designer: ACCEL-style edits of built-in family levels, no model needed.

Each proposal either draws a fresh level (``new``) or edits a parent from the
level buffer. Parents are picked by rank of the designer reward they earned
(P ~ (1/rank)^(1/T), as in PLR/ACCEL). Every edit is a move in the family's
edit space (``families.edits``), the one place that says what a level may be:

- task parameters:     ``harder`` / ``easier`` move one difficulty knob one step (``harder``
                       moves every one at once for a level the agent is done with); past the
                       hardest listed level a knob climbs into its family's extension, so the
                       curriculum can go where no fixed pool goes (the gate still proves each
                       level feasible);
- structure:           ``vary`` sets one variation dimension to another training choice: the
                       observation's wording, layout or line order, the actions' names or menu
                       order, the start (random moves before the first observation, initial
                       conditions), the instances (``variant``), the step cost, the turn budget;
- recombination:       ``crossover`` takes each knob and dimension from one of two parents of
                       the same family.

Variation reaches the pool through ``vary`` edits of parents; with
``distinct_games`` also through fresh draws of a game the pool already holds
(a skill has fewer families than a round has slots, so its easiest games come
back as near-copies on other instances): such a draw sets one variation
dimension to another training choice instead. With ``vary_fresh`` (a share)
fresh draws take a random training choice of every variation dimension (off
by default: in a default run it halved the learner's held-out success on the
listed games, 0.19 against 0.36, with no gain on the edge cases). No proposal
ever takes a held-out choice (the edge-case suite's slice), and no family in
``exclude`` (a run's unseen families) is ever proposed.

With ``climb`` (a red-team search), edits only make a parent harder: one
difficulty knob a step up, or two at once. A search's parents are levels the
target lost some plays of, and a failure rate that rises with stacked
difficulty is a gradient toward a corner where it fails for good.

Edits follow the parent's no-hint win rate (``directed``): a level the agent
has outgrown (above ``band``, 0.6) is made harder or varied, one it cannot do
(below 0.2) only easier, one inside the band any way. Undirected edits around
a frontier level are symmetric, so difficulty only drifts by chance; directed
ones climb as the agent masters levels, as ACCEL's complexity-adding edits do.
With ``balance_families``, a family whose levels the agent has all outgrown
or had its plays of (one above the band or retired, see
``BufferConfig.retire_after``, and none inside it) gets the skill's next
slot, and a harder edit of one of those levels.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, field_validator

from ..families import Family, FamilyError, get_family, list_families
from ..families.edits import EditSpace, edit_space
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
from .notes import MutationNotes

VERSION = "mutation-2"
OPERATORS = ("new", "harder", "easier", "vary", "crossover")


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
    vary_fresh: float = Field(0.0, ge=0, le=1, description="Share of fresh draws that take a random training choice of every variation dimension (wording, layout, action names, menu order, start, step cost, turn budget); the rest are the family as listed, in a random variant (true = 1, false = 0). 0 (the default: the built-in learner's skill on a variant does not carry back to the listed game): variation comes from vary edits of parents.")
    balance_families: bool = Field(True, description="Each slot goes to the skill's least-proposed family, so no family is starved of levels.")
    directed: bool = Field(True, description="Edit direction follows the parent's win rate (see the module docstring).")
    band: tuple[float, float] = Field((0.2, 0.6), description="No-hint win rates below it get only easier edits, above it only harder ones (or a variation); its top is where the band reward's plateau ends.")
    families: list[str] | None = Field(None, description="Only these built-in families (unset: every family of the skill).")
    fresh_uniform: bool = Field(False, description="Fresh draws take every listed knob value at random (a search), not one of the family's levels.")
    novelty_draws: int = Field(1, ge=1, description="A fresh draw is the most novel of this many (farthest from every level of its family proposed so far: novelty search); 1 = a plain draw.")
    climb: bool = Field(False, description="Edits only make a level harder, one difficulty knob a step up or two at once (a search climbing the target's failure rate; ignores ``directed``).")
    min_novelty: float = Field(0.0, ge=0, le=1, description="Levels closer than this to one already proposed are not proposed (see ``novelty``); above 0, never the same difficulty twice: a family with none left yields its slot, a skill with none left proposes fewer (a search).")
    distinct_games: bool = Field(False, description="No proposal is a game the pool already holds on other instances (the same knobs but variant): a fresh draw of one sets a variation dimension to another training choice instead, and no edit changes the instances alone. Off by default: it lifts the pool's diversity in a default run's first rounds but costs the built-in learner held-out success on the listed games (benchmarks/README.md).")
    held_out_choices: bool = Field(False, description="Also draw the variation dimensions' held-out choices (a red team probing a fixed agent); never in training, where they are the edge-case suite's slice.")

    @field_validator("families")
    @classmethod
    def _known_families(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            get_family(name)  # an unknown name (a typo would otherwise mean every family) names the nearest one
        return value


class Pending(NamedTuple):
    """A proposed candidate awaiting its reward: the operator that made it and the scope of the policy that chose
    it (its skill, or ``global``); stored in the designer's state as ``[operator, scope]``."""

    operator: str
    scope: str


@dataclass
class OperatorStats:
    """The bandit state for one scope (global or one skill): plain JSON data."""

    preferences: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0.0))
    baseline: float = 0.0
    uses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0))
    reward_sum: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OPERATORS, 0.0))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OperatorStats:
        """Stats as saved, with today's operators (a run saved with other operators keeps what still applies)."""
        out = cls(baseline=float(data.get("baseline", 0.0)))
        for name in ("preferences", "uses", "reward_sum"):
            getattr(out, name).update({o: v for o, v in data.get(name, {}).items() if o in OPERATORS})
        return out


class MutationDesigner:
    """Proposes built-in family levels by mutating the best parents; learns which edits pay."""

    name = "mutation"

    def __init__(self, seed: int = 0, config: MutationConfig | dict[str, Any] | None = None,
                 families: list[Family] | None = None, exclude: Sequence[str] = ()):
        self.config = MutationConfig.model_validate(config or {})
        # Its own families (an imported task's, say) instead of the built-in registry's.
        self.families = {f.name: f for f in families} if families else None
        self.exclude = tuple(exclude)  # never these (a run's unseen families)
        self.rng = random.Random(seed)
        self.serial = 0
        self.stats: dict[str, OperatorStats] = {}
        self.pending: dict[str, Pending] = {}  # candidate id -> the operator that made it and its policy's scope
        self.proposed: dict[str, int] = {}  # family -> levels proposed (family balance)
        self.visited: dict[str, list[list[float]]] = {}  # family -> distinct knob positions of its levels proposed
        self._spaces: dict[str, EditSpace] = {}

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
            made = self.pending.pop(earned.candidate_id, Pending(earned.operator, "global"))
            op, scope = made.operator, made.scope
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
        taken = {self._identity(p.family, self._completed(p.family, p.knobs)) for p in _all_levels(context) if p.family}
        out: list[Candidate] = []
        for _ in range(context.count):
            cand = self._one(context, families, parents, taken)
            if cand is not None:
                taken.add(self._identity(cand.family, cand.knobs))
                out.append(cand)
        return out

    def _families(self, skill: str) -> list[Family]:
        """The families of ``skill`` it draws from (all of its families when none trains that skill)."""
        if self.families is None:
            pool = [f for f in list_families() if f.name not in self.exclude]
        else:
            pool = [f for f in self.families.values() if f.name not in self.exclude]
        return [f for f in pool if f.skill == skill] or pool

    def _family(self, name: str) -> Family:
        if self.families is None:
            return get_family(name)
        if name not in self.families:
            raise FamilyError(f"unknown family {name!r}")
        return self.families[name]

    def space(self, family: Family) -> EditSpace:
        """The family's edit space (built once)."""
        if family.name not in self._spaces:
            self._spaces[family.name] = edit_space(family)
        return self._spaces[family.name]

    def _identity(self, family: str | None, knobs: dict[str, Any]) -> str:
        """What makes two levels one for ``taken``: their knobs, or with ``distinct_games`` their game (the
        knobs but ``variant``, which only maps reset seeds to other instances) where the family has other
        ways to vary (an imported task's instances are all it has)."""
        if self.config.distinct_games and self._varies(family):
            knobs = {k: v for k, v in knobs.items() if k != "variant"}
        return _key(family, knobs)

    def _varies(self, name: str | None) -> bool:
        """Whether the family has a variation dimension besides ``variant``."""
        try:
            return any(d != "variant" for d in self.space(self._family(name or "")).dimensions)
        except FamilyError:
            return False

    def _completed(self, family: str, knobs: dict[str, Any]) -> dict[str, Any]:
        """A stored level's knobs, completed the way ``render`` completes them."""
        try:
            return self._family(family).check_knobs(knobs)
        except FamilyError:
            return knobs

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
            edits = {} if parent is None else self._edits(parent, pool_parents or parents, outgrown=bool(outgrown))
            allowed = ("new", *(o for o in OPERATORS if edits.get(o)))
            if outgrown and len(allowed) > 1:
                allowed = allowed[1:]  # a fresh draw starts at the easiest levels, which it has outgrown
            probs = self.operator_probabilities(context.skill, allowed)
            op = self.rng.choices(list(probs), weights=list(probs.values()))[0]
            odds = {o: round(p, 4) for o, p in probs.items()}
            if op == "new" or parent is None:
                family = self.rng.choice(pool)
                knobs = self._fresh(family, taken)
                lineage = Lineage(parents=[], operator="new", designer=VERSION, depth=0)
                notes = MutationNotes(operator_probabilities=odds, level=knobs)
            else:
                family = self._family(parent.family)
                other, patch = self.rng.choice(edits[op])
                start = family.check_knobs(parent.knobs)
                knobs = {**start, **patch}
                lineage = Lineage(parents=[parent.env_id, *([other] if other else [])], operator=op, designer=VERSION,
                                  depth=parent.depth + 1)
                notes = MutationNotes(operator_probabilities=odds, edit=patch, before={k: start[k] for k in patch},
                                      parent_score=parent.score)
            if self._identity(family.name, knobs) in taken or self.novelty(family, knobs) < self.config.min_novelty:
                continue
            return self._candidate(family, knobs, lineage, context.skill, notes)
        return None

    def _fresh(self, family: Family, taken: set[str]) -> dict[str, Any]:
        """A fresh level: one of the family's easiest levels (or, with ``fresh_uniform``, the most novel of
        ``novelty_draws`` uniform draws of its listed knob values), in a random variation; with
        ``distinct_games``, of a game ``taken`` holds, one variation of it that it does not."""
        space, held_out = self.space(family), self.config.held_out_choices
        if self.config.fresh_uniform:
            draws = [{**{k: self.rng.choice(v.listed) for k, v in space.knobs.items()},
                      **self._variation(space, held_out)} for _ in range(self.config.novelty_draws)]
            return max(draws, key=lambda d: self.novelty(family, d))  # the first of equals
        knobs = {**family.level_knobs(self.rng.randint(0, min(family.max_level, self.config.new_max_level))),
                 **self._variation(space, held_out)}
        if not self.config.distinct_games or self._identity(family.name, knobs) not in taken:
            return knobs
        # A skill has fewer families than a round has slots, so its easiest games come back: one
        # variation makes the slot another game rather than a near-copy on other instances.
        varies = [{**knobs, **s.patch()} for s in space.steps(knobs, held_out=held_out)
                  if s.kind not in ("harder", "easier") and s.name != "variant"]
        new = [v for v in varies if self._identity(family.name, v) not in taken]
        return self.rng.choice(new or varies) if varies else knobs

    def _variation(self, space: EditSpace, held_out: bool) -> dict[str, Any]:
        share = self.config.vary_fresh
        # Only a share strictly between 0 and 1 draws a coin, so runs at 0 or 1 keep their random streams.
        if share >= 1 or (share > 0 and self.rng.random() < share):
            return space.random_variation(self.rng, held_out=held_out)
        return {"variant": self.rng.choice(space.allowed("variant"))} if "variant" in space.dimensions else {}

    def _edits(self, parent: LevelSummary, siblings: list[LevelSummary],
               outgrown: bool) -> dict[str, list[tuple[str | None, dict[str, Any]]]]:
        """Per operator, the edits it can make of ``parent``: (second parent's id or None, patch)."""
        family = self._family(parent.family or "")
        space = self.space(family)
        knobs = family.check_knobs(parent.knobs)
        if self.config.climb:
            return {"harder": [(None, patch) for patch in _climbs(space, knobs)]}
        direction = self._direction(parent)
        same_game = self.config.distinct_games and self._varies(family.name)  # a change of instances alone
        out = {op: [(None, patch) for patch in patches if not (same_game and set(patch) == {"variant"})]
               for op, patches in _edits(space, knobs, direction, self.config.held_out_choices).items()}
        if outgrown:  # the slot went to a family the agent has outgrown: a harder level of it
            return {"harder": out["harder"]}
        if direction >= 0:
            mates = [p for p in siblings if p.family == parent.family and p.env_id != parent.env_id]
            out["crossover"] = [(mate.env_id, patch) for mate in mates
                                for patch in [_crossover(self.rng, knobs, family.check_knobs(mate.knobs))] if patch]
        return out

    def novelty(self, family: Family, knobs: dict[str, Any]) -> float:
        """Distance (mean over difficulty knobs, each scaled to [0, 1]) to the nearest level of the
        family proposed so far; 1 when it has none."""
        point = _position(self.space(family), knobs)
        return min((sum(abs(a - b) for a, b in zip(point, seen)) / max(1, len(point))
                    for seen in self.visited.get(family.name, [])), default=1.0)

    def _candidate(self, family: Family, knobs: dict[str, Any], lineage: Lineage, skill: str,
                   notes: MutationNotes) -> Candidate:
        self.serial += 1
        self.proposed[family.name] = self.proposed.get(family.name, 0) + 1
        # Each position once: novelty is a minimum over them, so a repeat changes nothing, and kept it would grow the
        # designer's state (written every round) with the rounds played rather than with the family's knob grid.
        seen, point = self.visited.setdefault(family.name, []), _position(self.space(family), knobs)
        if point not in seen:
            seen.append(point)
        cid = f"mut-{self.serial:05d}-{self.rng.getrandbits(32):08x}"
        self.pending[cid] = Pending(lineage.operator, self._scope(skill))
        level = Level(family.render(knobs), skill=family.skill, params=Params(family.name, dict(knobs)), lineage=lineage)
        return Candidate(level, candidate_id=cid, notes=notes)

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
        """+1: only harder edits (or a variation); -1: only easier; 0: any (in the band, or undirected).

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
        self.stats = {s: OperatorStats.from_dict(st) for s, st in state.get("stats", {}).items()}
        self.pending = {k: Pending(*v) for k, v in state.get("pending", {}).items()}
        self.proposed = {k: int(v) for k, v in state.get("proposed", {}).items()}
        self.visited = {k: [list(p) for p in v] for k, v in state.get("visited", {}).items()}


def _edits(space: EditSpace, knobs: dict[str, Any], direction: int = 0,
           held_out: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every edit (a patch of knob values) each operator can make to this level, in ``direction`` (0: any).

    Inside the band (0) ``harder`` and ``easier`` move one difficulty knob one step, to
    look around the frontier. For a level the agent has outgrown or had its plays
    of (+1), ``harder`` moves every difficulty knob one step at once: one step
    per knob took a family from its easiest level to the next in 4-5 edits, each
    waiting for plays, so runs trained on the easiest levels (mean difficulty
    0.1 of 1) long after the learner had stopped gaining there. ``vary`` keeps the
    difficulty: worth it for a level in the band or outgrown, never for one too hard.
    """
    edits: dict[str, list[dict[str, Any]]] = {"harder": [], "easier": [], "vary": []}
    level_up: dict[str, Any] = {}
    for step in space.steps(knobs, held_out=held_out):
        if step.kind == "harder" and direction >= 0:
            edits["harder"].append(step.patch())
            level_up.update(step.patch())
        elif step.kind == "easier" and direction <= 0:
            edits["easier"].append(step.patch())
        elif step.kind not in ("harder", "easier") and direction >= 0:
            edits["vary"].append(step.patch())
    if direction > 0 and level_up:
        edits["harder"] = [level_up]
    return edits


def _climbs(space: EditSpace, knobs: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``harder`` edits of a search: every difficulty knob one step up, alone or with one other."""
    ups = [s.patch() for s in space.steps(knobs) if s.kind == "harder"]
    return ups + [{**a, **b} for i, a in enumerate(ups) for b in ups[i + 1:]]


def _crossover(rng: random.Random, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The patch that turns ``a`` into a uniform crossover of ``a`` and ``b`` (each value from either); {} if
    the child is ``a``."""
    return {k: b[k] for k in a if a[k] != b.get(k, a[k]) and rng.random() < 0.5}


def _position(space: EditSpace | Family, knobs: dict[str, Any]) -> list[float]:
    """Where a level sits on each difficulty knob: its value's rank among the knob's distinct listed values
    (past them, above 1), so 0 is the easiest and 1 the hardest listed value."""
    space = space if isinstance(space, EditSpace) else edit_space(space)
    full = space.check(knobs, held_out=True)
    out = []
    for name, knob in space.knobs.items():
        listed = list(dict.fromkeys(knob.listed))
        out.append(knob.values.index(full[name]) / max(1, len(listed) - 1))
    return out


def _allowed(families: list[Family], names: list[str] | None) -> list[Family]:
    """``families`` limited to ``names`` (all of them when ``names`` is None, or when none is left)."""
    kept = [f for f in families if not names or f.name in names]
    return kept or families


def _key(family: str | None, knobs: dict[str, Any]) -> str:
    return f"{family}:{json.dumps(knobs, sort_keys=True, default=str)}"


def _all_levels(context: DesignContext) -> list[LevelSummary]:
    return [*context.parents, *context.frontier, *context.mastered, *context.hopeless]
