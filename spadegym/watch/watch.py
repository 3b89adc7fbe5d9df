"""The watch of a run: it keeps each level's evidence, probes new levels, flags designers, prices rewards.

The loop calls it once per round, in the order of the round::

    probes = await watch.probe(host, levels, new, episodes)  # after the plays: probe plays
    watch.observe(n, episodes, probes, designers, sources, stats)
    shares = watch.prices(stats)                             # what each level's reward keeps (0 or 1)
    watch.assess(n, summary)                                 # the round's ``designer_watch`` record

Its state is plain JSON (``state_dict``), saved with every round, so a resumed
run flags and prices as an uninterrupted one does; the trend check's series are
the round summaries' own figures, given back to a resumed watch from the store
(``resume_trends``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..curriculum.diversity import per_item
from ..level import Level
from ..rollout import Episode, RolloutConfig, derive_seed
from ..signals import EnvStats
from ..signals.hacking import Trends
from . import behaviour
from .evidence import COSMETIC_BEHAVIOUR, PROBE_GROUP, LevelEvidence, Outcome
from .rules import designer_counts, flagged_kinds, price


class WatchConfig(BaseModel):
    """The reward-hacking watch (``watch`` section of a run's config)."""

    model_config = {"extra": "forbid"}

    probe_seeds: int = Field(3, ge=0, description="Instance seeds at which each new level is played by the probe policies (0: no probe plays; then no behaviour twins).")
    window: int = Field(8, ge=1, description="A designer's flags read its levels first played in the last N rounds.")
    min_levels: int = Field(4, ge=1, description="Levels showing a finding before their designer is flagged for it.")
    min_share: float = Field(0.3, gt=0, le=1, description="... and their least share of the levels whose evidence decides it.")
    price: bool = Field(True, description="Once a designer is flagged for a finding, its levels that show it (or its first-round profile) earn no positive designer reward.")


def outcome(episode: Episode) -> Outcome:
    """What the watch reads of an episode: seed, arm, success and the actions played."""
    return Outcome(episode.env_id, episode.seed, episode.hinted, episode.success,
                   tuple(t.action or "" for t in episode.turns))


class Watch:
    """Evidence per level, behaviour fingerprints of the pool, flags per designer."""

    def __init__(self, config: WatchConfig | None = None, seed: int = 0):
        self.config = config or WatchConfig()
        self.seeds = [derive_seed(seed, "probe", j) for j in range(self.config.probe_seeds)]
        self.levels: dict[str, LevelEvidence] = {}
        self.behaviour: dict[str, list[list[str]]] = {}  # env id -> its probe plays' tokens (pool levels)
        self.caught: dict[str, dict[str, int]] = {}  # designer -> finding -> the round it was first flagged
        self.trends = Trends()  # the tails of the summaries' series the trend check reads (bounded)

    # -- one round ---------------------------------------------------------------------------------
    async def probe(self, host: object, levels: Mapping[str, Level], new: Sequence[str], episodes: Sequence[Episode],
                    rollout: RolloutConfig | None = None) -> list[Episode]:
        """The round's probe plays: each new level at the probe seeds (its fingerprint), and every level at
        each instance seed where all of this round's plays ended alike (would other actions change that?)."""
        outcomes: dict[tuple[str, int], set[bool]] = defaultdict(set)
        for ep in episodes:
            if ep.scored:
                outcomes[(ep.env_id, ep.seed)].add(ep.success)
        alike = [key for key, seen in outcomes.items() if len(seen) == 1]
        at = [(env_id, seed) for env_id in new for seed in self.seeds] + alike
        return await behaviour.probe(host, {e: levels[e] for e, _ in at}, at, rollout)

    def observe(self, round_: int, episodes: Sequence[Episode], probes: Sequence[Episode],
                designers: Mapping[str, str], sources: Mapping[str, str], stats: Mapping[str, EnvStats]) -> None:
        """Take in one round: ``designers`` names who proposed each new level, ``sources`` every level's code."""
        for env_id, designer in designers.items():
            self.levels.setdefault(env_id, LevelEvidence(designer=designer, added=round_))
        fixed = set(self.seeds)
        by_level: dict[tuple[str, int], list[Episode]] = defaultdict(list)
        for ep in episodes:
            if ep.scored and ep.env_id in self.levels:
                by_level[(ep.env_id, round_)].append(ep)
        for ep in probes:  # at the probe seeds: a group of their own; at a round's seed: that round's
            if ep.scored and ep.env_id in self.levels:
                by_level[(ep.env_id, PROBE_GROUP if ep.seed in fixed else round_)].append(ep)
                self.levels[ep.env_id].probe_plays += 1
                self.levels[ep.env_id].probe_wins += ep.success
        for (env_id, group), eps in by_level.items():
            self.levels[env_id].record((outcome(ep) for ep in eps), group)
        for env_id, s in stats.items():
            if env_id in self.levels:
                self.levels[env_id].record_round(round_, s.win_rate, s.win_rate_hint if s.plays_hint else None)
        self._twins(designers, probes, sources)

    def _twins(self, new: Mapping[str, str], probes: Sequence[Episode], sources: Mapping[str, str]) -> None:
        """Each new level's behaviour twin among the pool and the round's earlier new levels, and how alike
        the two codes read."""
        plays: dict[str, list[list[str]]] = defaultdict(list)
        for ep in probes:
            if ep.scored and ep.seed in self.seeds:
                plays[ep.env_id].append(behaviour.behaviour_tokens(ep))
        prints = {env_id: behaviour.fingerprint(tokens) for env_id, tokens in self.behaviour.items()}
        for env_id in new:
            if not plays.get(env_id):
                continue
            mine = behaviour.fingerprint(plays[env_id])
            found = behaviour.twin(mine, {k: v for k, v in prints.items() if k in sources})
            ev = self.levels[env_id]
            if found is not None:
                ev.twin, ev.twin_behaviour = found[0], round(found[1], 4)
                if found[1] >= COSMETIC_BEHAVIOUR:  # only a twin's code is worth comparing
                    ev.twin_code = round(behaviour.code_similarity(sources[env_id], sources[found[0]]), 4)
            self.behaviour[env_id] = plays[env_id]
            prints[env_id] = mine

    def diversity(self, new: Sequence[str], pool: Sequence[str]) -> dict[str, float | None]:
        """Vendi score per level of the probe plays' fingerprints (behaviour, not text): the round's new
        levels and the pool; what a cosmetic designer cannot raise by rewording."""
        def score(ids: Sequence[str]) -> float | None:
            return per_item([behaviour.fingerprint(self.behaviour[i]) for i in ids if i in self.behaviour])

        return {"new_behaviour": score(new), "pool_behaviour": score(pool)}

    def keep(self, pool: set[str], round_: int) -> None:
        """Forget the fingerprints of levels that left the pool, and the evidence of levels too old to count."""
        self.behaviour = {k: v for k, v in self.behaviour.items() if k in pool}
        self.levels = {k: v for k, v in self.levels.items() if k in pool or v.added > round_ - self.config.window}

    def prices(self, stats: Mapping[str, EnvStats]) -> dict[str, float]:
        """The share of its designer reward each level played keeps (1 when pricing is off)."""
        if not self.config.price:
            return dict.fromkeys(stats, 1.0)
        out = {}
        for env_id in stats:
            ev = self.levels.get(env_id)
            out[env_id] = 1.0 if ev is None else price(ev, self.caught.get(ev.designer, {}))
        return out

    def assess(self, round_: int, summary: dict[str, Any]) -> dict[str, Any]:
        """The round's watch record: each designer's counts and flagged findings, the trend check over the
        summaries so far and this round's ``summary``, the flag."""
        c = self.config
        designers = {}
        for designer, counts in sorted(designer_counts(self.levels.values(), round_, c.window).items()):
            kinds = flagged_kinds(counts, c.min_levels, c.min_share)
            for kind in kinds:
                self.caught.setdefault(designer, {}).setdefault(kind, round_)
            designers[designer] = {"kinds": kinds, "levels": {k: v for k, v in counts.items() if v[1]}}
        self.trends.add(summary)
        trend = self.trends.check()
        kinds = sorted({k for d in designers.values() for k in d["kinds"]} | ({"trend"} if trend["flag"] else set()))
        return {**trend, "flag": bool(kinds), "kinds": kinds, "designers": designers,
                "caught": {d: dict(k) for d, k in self.caught.items()}}

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"levels": {k: v.to_dict() for k, v in self.levels.items()}, "behaviour": self.behaviour,
                "caught": self.caught}

    def resume_trends(self, summaries: Sequence[dict[str, Any]]) -> None:
        """The trend check's series of a resumed run: its stored round summaries, in order (read once)."""
        self.trends = Trends.over(summaries)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.levels = {k: LevelEvidence.from_dict(v) for k, v in state.get("levels", {}).items()}
        self.behaviour = {k: [list(t) for t in v] for k, v in state.get("behaviour", {}).items()}
        self.caught = {d: dict(k) for d, k in state.get("caught", {}).items()}
