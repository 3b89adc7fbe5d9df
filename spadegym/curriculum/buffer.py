"""The level buffer: Prioritized Level Replay (Jiang et al. 2021) as used by ACCEL.

Settings (``BufferConfig``) live apart from state (``BufferState``, plain data
that goes straight into the run store). Replay probability over stored levels:

    P_replay = (1 - rho) * P_score + rho * P_staleness

with P_score from rank (or top-k) prioritisation at a temperature, and
P_staleness proportional to the rounds since a level was last played. With
``balance`` (the default, by family), each replay first goes to the group
played least so far, then to a level by that group's own distribution.
A level played ``retire_after`` times leaves replay (it is replayed again only
when no other level is left): the curriculum moves on from a level the learner
has had its share of, whether or not it masters it.

Past ``capacity`` a level leaves the buffer (a level not yet played stays until
it has been judged): the lowest-scoring (``evict = "score"``), or the
lower-scoring of the two levels most alike in code and play (``"redundant"``,
the buffer's ``similarity``), so the pool keeps distinct games rather than
many near-copies of the few that score best.

A level's score is the designer reward it earned (``replay_score =
"designer_reward"``), or its no-hint learning progress (``"learning_progress"``,
PLR's positive value loss without a critic: the mean over a round's no-hint
plays of ``max(return - V, 0)``, with ``V`` the level's no-hint win rate before
the round, its skill's running win rate for a new level). A level scores high
while the agent wins it more often than it used to; one it always wins, or
never, scores 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ..level import Level


class BufferConfig(BaseModel):
    """Level buffer settings (PLR/ACCEL)."""

    model_config = {"extra": "forbid"}

    capacity: int = Field(48, ge=1, description="Most levels kept: as many as the listed levels of the training families (a run seeded with pool.path: plus the pool's files); past it a played level leaves (see evict).")
    evict: Literal["score", "redundant"] = Field("redundant", description="Which level leaves past capacity: score: the lowest-scoring; redundant: the lower-scoring of the two most alike in code and play (the pool keeps distinct games).")
    replay_fraction: float = Field(0.75, ge=0, le=1, description="Share of a round's environments replayed from the buffer once it is filled.")
    min_fill: int = Field(8, ge=0, description="Levels needed before any replay.")
    prioritization: Literal["rank", "topk"] = Field("rank", description="rank: P ~ (1/rank)^(1/T); topk: uniform over the k best.")
    temperature: float = Field(0.3, gt=0, description="Rank prioritisation temperature (lower = greedier).")
    top_k: int = Field(8, ge=1, description="k for top-k prioritisation.")
    staleness_coef: float = Field(0.3, ge=0, le=1, description="rho: weight of staleness in the replay distribution.")
    balance: Literal["none", "family", "skill"] = Field("family", description="Each replay goes to the group (family or skill) played least so far, then to a level within it by priority; none: one ranking over all levels.")
    window: int = Field(3, ge=1, description="A level's score, win rates and regret are means over its last N plays: one play draws few instance seeds (2 by default), so its win rate swings by +-0.3.")
    retire_after: int = Field(6, ge=0, description="A level leaves replay after this many plays (0: never); it stays a parent, so the designer makes its family a harder level. A learner stalls on a level long before it masters it.")
    replay_score: Literal["designer_reward", "learning_progress"] = Field("designer_reward", description="What ranks levels for replay (and as parents): designer_reward (the designer reward each earned) or learning_progress (no-hint positive value loss: how much better the agent did than its win rate before).")


def learning_progress(returns: Sequence[float], value: float) -> float:
    """PLR's positive value loss with the level's prior win rate as the value: mean of ``max(return - value, 0)``."""
    return float(np.mean([max(r - value, 0.0) for r in returns])) if returns else 0.0


@dataclass
class LevelRecord:
    """Per-level history kept by the buffer."""

    env_id: str
    skill: str
    code_hash: str
    added_round: int
    score: float = 0.0  # replay priority: the designer reward it earned (mean over the last ``window`` plays)
    win_rate: float = 0.0  # these three: means over the last ``window`` plays too
    win_rate_hint: float = 0.0
    regret: float = 0.0
    last_played: int = -1
    times_played: int = 0
    depth: int = 0  # mutation depth
    parents: list[str] = field(default_factory=list)
    family: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)
    history: list[list[float]] = field(default_factory=list)  # [round, win_rate, win_rate_hint, score, regret] per play

    @classmethod
    def of(cls, env_id: str, level: Level, added_round: int) -> LevelRecord:
        """A new level's record: what the buffer keeps of its skill, params and lineage."""
        return cls(env_id=env_id, skill=level.skill, code_hash=level.code_hash, added_round=added_round,
                   depth=level.lineage.depth, parents=list(level.lineage.parents), family=level.family,
                   knobs=dict(level.knobs))


@dataclass
class BufferState:
    levels: dict[str, LevelRecord] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)  # code hash -> env id (duplicate detection)
    # Levels played so far per group, by grouping ("family", "skill"): kept apart from the levels,
    # so a group's count survives the eviction of its levels.
    plays: dict[str, dict[str, int]] = field(default_factory=lambda: {"family": {}, "skill": {}})

    def to_dict(self) -> dict[str, Any]:
        return {"levels": {k: asdict(v) for k, v in self.levels.items()}, "hashes": dict(self.hashes),
                "plays": {k: dict(v) for k, v in self.plays.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BufferState:
        plays = {"family": {}, "skill": {}, **{k: dict(v) for k, v in data.get("plays", {}).items()}}
        return cls(levels={k: LevelRecord(**v) for k, v in data.get("levels", {}).items()},
                   hashes=dict(data.get("hashes", {})), plays=plays)


def retired(times_played: int, retire_after: int) -> bool:
    """The retirement rule: a level played ``retire_after`` times leaves replay (0: never). The buffer and the
    adapters that serve a live run's buffer (``adapters.RunLevels``) both read it here."""
    return 0 < retire_after <= times_played


def group_key(family: str | None, skill: str, by: str) -> str:
    """The replay group of a level: its family (its skill if it has none) or its skill."""
    return (family or skill) if by == "family" else skill


class LevelBuffer:
    """Stores levels, detects duplicates, and samples replays.

    Beside its state (plain data, saved with every round) it holds each stored
    level itself (``level``), which leaves with its record; the store keeps the
    levels, so a resumed buffer is given them back (``hold``).
    """

    HISTORY_LIMIT = 64

    def __init__(self, config: BufferConfig | None = None, state: BufferState | None = None,
                 similarity: Callable[[list[str]], np.ndarray] | None = None):
        self.config = config or BufferConfig()
        self.state = state or BufferState()
        self.held: dict[str, Level] = {}  # env id -> the level its record describes
        #: env ids -> their pairwise similarity (unit diagonal): what ``evict = "redundant"`` compares.
        self.similarity = similarity

    def __len__(self) -> int:
        return len(self.state.levels)

    def __contains__(self, env_id: str) -> bool:
        return env_id in self.state.levels

    def duplicate_of(self, code_hash: str) -> str | None:
        """The id of a stored level with the same normalised code, if any."""
        return self.state.hashes.get(code_hash)

    def add(self, record: LevelRecord, level: Level | None = None) -> bool:
        """Insert a level (its record, and the level itself); False if it duplicates a stored one. Evicts beyond capacity."""
        if record.code_hash in self.state.hashes:
            return False
        self.state.levels[record.env_id] = record
        self.state.hashes[record.code_hash] = record.env_id
        if level is not None:
            self.held[record.env_id] = level
        self.trim()
        return True

    def trim(self) -> None:
        """Evict down to ``capacity``, never a level that has not been played while a played one is left."""
        excess = len(self.state.levels) - self.config.capacity
        if excess <= 0:
            return
        played = [i for i, r in self.state.levels.items() if r.times_played] or list(self.state.levels)
        if self.config.evict == "redundant" and self.similarity is not None and len(played) > 1:
            for env_id in self._redundant(played, excess):
                self.remove(env_id)
        for _ in range(len(self.state.levels) - self.config.capacity):
            candidates = [r for r in self.state.levels.values() if r.times_played] or list(self.state.levels.values())
            self.remove(min(candidates, key=self._weakest).env_id)

    @staticmethod
    def _weakest(record: LevelRecord) -> tuple[float, int, int]:
        return record.score, record.last_played, record.added_round

    def _redundant(self, ids: list[str], count: int) -> list[str]:
        """``count`` of ``ids`` to evict, one at a time: the weaker of the two most alike among those left."""
        sim = np.array(self.similarity(ids), dtype=np.float64)
        np.fill_diagonal(sim, -np.inf)
        out: list[str] = []
        for _ in range(min(count, len(ids) - 1)):
            a, b = np.unravel_index(int(np.argmax(sim)), sim.shape)
            gone = min((a, b), key=lambda k: self._weakest(self.state.levels[ids[k]]))
            out.append(ids[gone])
            sim[gone, :] = sim[:, gone] = -np.inf
        return out

    def remove(self, env_id: str) -> None:
        record = self.state.levels.pop(env_id, None)
        self.held.pop(env_id, None)
        if record is not None:
            self.state.hashes.pop(record.code_hash, None)

    def level(self, env_id: str) -> Level:
        """The stored level ``env_id`` (KeyError when the buffer does not hold it)."""
        return self.held[env_id]

    def hold(self, levels: dict[str, Level]) -> None:
        """Give a restored buffer its levels back (those of its records)."""
        self.held.update({k: v for k, v in levels.items() if k in self.state.levels})

    def record_play(self, env_id: str, round_: int, score: float, win_rate: float,
                    win_rate_hint: float, regret: float) -> None:
        """Update a level after it was played this round."""
        r = self.state.levels.get(env_id)
        if r is None:
            return
        latest = [win_rate, win_rate_hint, score, regret]
        past = [h[1:] for h in r.history[-(self.config.window - 1):]] if self.config.window > 1 else []
        means = [float(np.mean([h[i] if i < len(h) else latest[i] for h in past] + [latest[i]])) for i in range(4)]
        r.win_rate, r.win_rate_hint, r.score, r.regret = means
        r.last_played, r.times_played = round_, r.times_played + 1
        for by in ("family", "skill"):
            key = group_key(r.family, r.skill, by)
            self.state.plays[by][key] = self.state.plays[by].get(key, 0) + 1
        r.history.append([round_, round(win_rate, 4), round(win_rate_hint, 4), round(score, 4), round(regret, 4)])
        del r.history[: -self.HISTORY_LIMIT]

    # -- replay ---------------------------------------------------------------
    def replay_count(self, total: int) -> int:
        """How many of ``total`` environments this round come from the buffer."""
        if len(self) < max(1, self.config.min_fill):
            return 0
        return min(len(self), int(round(total * self.config.replay_fraction)))

    def retired(self, record: LevelRecord) -> bool:
        """Whether a level has had its plays (``retire_after``) and leaves replay."""
        return retired(record.times_played, self.config.retire_after)

    def replay_probabilities(self, current_round: int) -> tuple[list[str], np.ndarray]:
        """Replay probability of each level still in replay (all levels when every one is retired)."""
        ids = [i for i, r in self.state.levels.items() if not self.retired(r)] or list(self.state.levels)
        if not ids:
            return ids, np.zeros(0)
        scores = np.array([self.state.levels[i].score for i in ids], dtype=np.float64)
        last = np.array([self.state.levels[i].last_played for i in ids], dtype=np.float64)
        staleness = np.maximum(current_round - last, 0.0)
        if self.config.balance == "none":
            return ids, self._mixed(scores, staleness)
        return ids, self._balanced(ids, scores, staleness)

    def _mixed(self, scores: np.ndarray, staleness: np.ndarray) -> np.ndarray:
        """(1 - rho) P_score + rho P_staleness over the given levels."""
        p_stale = staleness / staleness.sum() if staleness.sum() > 0 else np.full(len(scores), 1 / len(scores))
        rho = self.config.staleness_coef
        p = (1 - rho) * self._score_distribution(scores) + rho * p_stale
        return p / p.sum()

    def _balanced(self, ids: list[str], scores: np.ndarray, staleness: np.ndarray) -> np.ndarray:
        """Equal mass per group, spread within each group by that group's own PLR distribution.

        One ranking over all levels lets the families that score highest take
        most replays; the held-out suite (and a user) weighs every family alike.
        """
        keys = self._group_keys(ids)
        groups: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        p = np.zeros(len(ids))
        for members in groups.values():
            idx = np.array(members)
            p[idx] = self._mixed(scores[idx], staleness[idx]) / len(groups)
        return p / p.sum()

    def _score_distribution(self, scores: np.ndarray) -> np.ndarray:
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(len(scores))
        ranks[order] = np.arange(1, len(scores) + 1)
        if self.config.prioritization == "topk":
            weights = (ranks <= self.config.top_k).astype(np.float64)
        else:
            weights = (1.0 / ranks) ** (1.0 / self.config.temperature)
        return weights / weights.sum()

    def _group_keys(self, ids: list[str]) -> list[str]:
        by = self.config.balance
        return [group_key(r.family, r.skill, by) for r in (self.state.levels[i] for i in ids)]

    def sample_replay(self, n: int, current_round: int, rng: np.random.Generator,
                      fresh: Sequence[tuple[str | None, str]] = ()) -> list[str]:
        """Draw ``n`` distinct levels by replay probability.

        With ``balance``, each draw goes to the group played least so far
        (counting ``fresh``, the (family, skill) of this round's new levels),
        then to a level within it by that group's PLR distribution. Equal
        probabilities alone leave a group that entered the buffer late behind
        for the whole run (one run played one family 7 times and another 23).
        Retired levels fill the round only when no other level is left.
        """
        ids, p = self.replay_probabilities(current_round)
        offered = set(ids)
        spare = [i for i in self.state.levels if i not in offered]  # retired, while others remain
        picked = self._draw(ids, p, min(n, len(ids)), rng, fresh)
        if len(picked) < n and spare:
            spare_ids, spare_p = spare, np.full(len(spare), 1.0 / len(spare))
            counted = [*fresh, *((self.state.levels[i].family, self.state.levels[i].skill) for i in picked)]
            picked += self._draw(spare_ids, spare_p, min(n - len(picked), len(spare)), rng, counted)
        return picked

    def _draw(self, ids: list[str], p: np.ndarray, n: int, rng: np.random.Generator,
              fresh: Sequence[tuple[str | None, str]]) -> list[str]:
        if n == 0:
            return []
        if self.config.balance == "none":
            return [ids[i] for i in rng.choice(len(ids), size=n, replace=False, p=p)]
        keys = np.array(self._group_keys(ids))
        played = Counter(self.state.plays.get(self.config.balance, {}))
        played.update(group_key(family, skill, self.config.balance) for family, skill in fresh)
        left = np.maximum(p, 1e-12)  # every level offered stays drawable
        picked = []
        for _ in range(n):
            open_groups = sorted(set(keys[left > 0]))
            fewest = min(played[g] for g in open_groups)
            tied = [g for g in open_groups if played[g] == fewest]
            group = tied[int(rng.integers(len(tied)))]
            weights = np.where(keys == group, left, 0.0)
            i = int(rng.choice(len(ids), p=weights / weights.sum()))
            picked.append(ids[i])
            left[i], played[group] = 0.0, played[group] + 1
        return picked

    def ranked(self, skill: str | None = None) -> list[LevelRecord]:
        """Levels by descending score (optionally of one skill): parents for mutation."""
        levels = [r for r in self.state.levels.values() if skill is None or r.skill == skill]
        return sorted(levels, key=lambda r: -r.score)

    def stats(self) -> dict[str, Any]:
        levels = list(self.state.levels.values())
        if not levels:
            return {"size": 0}
        return {
            "size": len(levels),
            "score_mean": float(np.mean([r.score for r in levels])),
            "win_rate_mean": float(np.mean([r.win_rate for r in levels])),
            "depth_mean": float(np.mean([r.depth for r in levels])),
            "depth_max": int(max(r.depth for r in levels)),
            "retired": sum(self.retired(r) for r in levels),
        }
