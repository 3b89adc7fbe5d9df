"""What the report shows, read from the store: per-round series, distributions, correlations.

Round summaries are written by the loop and may carry any subset of the known
keys; each series is taken from the summaries when present and otherwise
derived from the scores table where that is well defined (win rates, band
fraction), so older or partial runs still get their plots.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..figures import finite_or_none
from ..signals import bands, pearson
from ..store import RunStore

BAND = bands.LEARNABLE  # the learnable band: no-hint win rate partly solved


@dataclass
class Series:
    """One line of a per-round plot."""

    label: str
    rounds: list[int]
    values: list[float]


@dataclass
class Correlation:
    """Hint regret against oracle regret over the score rows that have both."""

    regret: list[float]
    oracle: list[float]
    pearson: float | None  # None when fewer than 3 points or no variance


@dataclass
class RunData:
    """Everything the report needs, read once from the store."""

    config: dict[str, Any]
    versions: dict[str, Any]
    created_at: float | None
    summaries: list[dict[str, Any]]
    environments: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    proposals: list[dict[str, Any]]
    latest_scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    episode_count: int = 0

    @property
    def round_numbers(self) -> list[int]:
        return [s["round"] for s in self.summaries]

    # -- per-round series ------------------------------------------------

    def summary_series(self, key: str, label: str | None = None) -> Series | None:
        """A numeric summary key over rounds (``a.b``: key b of dict a); None if no round carries it."""
        def value(summary: dict[str, Any]) -> Any:
            for part in key.split("."):
                summary = summary.get(part) if isinstance(summary, dict) else None
            return summary

        pts = [(s["round"], _num(value(s))) for s in self.summaries]
        pts = [(r, v) for r, v in pts if v is not None]
        if not pts:
            return None
        return Series(label or key, [r for r, _ in pts], [v for _, v in pts])

    def summary_dict_series(self, key: str) -> list[Series]:
        """A dict-valued summary key (e.g. difficulty_mean, heldout_by_family): one series per entry."""
        names: dict[str, None] = {}
        for s in self.summaries:
            if isinstance(s.get(key), dict):
                names.update(dict.fromkeys(s[key]))
        out = []
        for name in names:
            pts = [
                (s["round"], _num(s[key].get(name))) for s in self.summaries if isinstance(s.get(key), dict)
            ]
            pts = [(r, v) for r, v in pts if v is not None]
            if pts:
                out.append(Series(str(name), [r for r, _ in pts], [v for _, v in pts]))
        return out

    def _score_series(self, label: str, reduce) -> Series | None:
        by_round: dict[int, list[dict[str, Any]]] = {}
        for row in self.scores:
            by_round.setdefault(row["round"], []).append(row)
        pts = [(r, reduce(rows)) for r, rows in sorted(by_round.items())]
        pts = [(r, v) for r, v in pts if v is not None]
        return Series(label, [r for r, _ in pts], [v for _, v in pts]) if pts else None

    def win_rates(self) -> list[Series]:
        out = []
        for key, label in (("win_rate", "no hint"), ("win_rate_hint", "with hint")):
            series = self.summary_series(key, label) or self._score_series(
                label, lambda rows, k=key: _mean(rows, k)
            )
            if series:
                out.append(series)
        return out

    def band_fraction(self) -> Series | None:
        def share(rows: list[dict[str, Any]]) -> float | None:
            rates = [r["win_rate"] for r in rows if r["win_rate"] is not None]
            return sum(BAND[0] <= w <= BAND[1] for w in rates) / len(rates) if rates else None

        return self.summary_series("band_fraction", "band fraction") or self._score_series(
            "band fraction", share
        )

    def difficulty(self) -> list[Series]:
        scalar = self.summary_series("difficulty_mean", "mean difficulty")
        return [scalar] if scalar else self.summary_dict_series("difficulty_mean")

    def diversity(self) -> list[Series]:
        """Vendi score per level of each round's new levels and of the pool: by identity (code and transcript),
        over code, over transcripts."""
        labels = (("new", "new levels, code and play"), ("pool", "pool, code and play"),
                  ("new_code", "new levels, code"), ("new_play", "new levels, transcripts"),
                  ("pool_code", "pool, code"), ("pool_play", "pool, transcripts"))
        found = (self.summary_series(f"diversity.{key}", label) for key, label in labels)
        return [s for s in found if s is not None]

    def validity(self) -> Series | None:
        """Share of proposals that passed validation, per round."""
        pts = []
        for s in self.summaries:
            valid, total = _num(s.get("valid")), _num(s.get("proposals"))
            if valid is None or not total:
                props = [p for p in self.proposals if p["round"] == s["round"]]
                valid, total = sum(p["valid"] for p in props), len(props)
            if total:
                pts.append((s["round"], valid / total))
        return Series("valid share", [r for r, _ in pts], [v for _, v in pts]) if pts else None

    def refusals(self) -> Counter:
        """Refusal reasons summed over rounds (from the summaries)."""
        total: Counter = Counter()
        for s in self.summaries:
            if isinstance(s.get("refusals"), dict):
                total.update({str(k): int(v) for k, v in s["refusals"].items() if _num(v) is not None})
        return total

    def skill_mix(self) -> dict[str, list[float]]:
        """Skill -> count per round (0 where absent), aligned with round_numbers."""
        skills: dict[str, None] = {}
        for s in self.summaries:
            if isinstance(s.get("skill_mix"), dict):
                skills.update(dict.fromkeys(s["skill_mix"]))
        return {
            skill: [float(_num((s.get("skill_mix") or {}).get(skill)) or 0.0) for s in self.summaries]
            for skill in skills
        }

    # -- distributions ---------------------------------------------------

    def values(self, key: str) -> list[float]:
        """All non-null values of a score column over every round."""
        return [v for v in (_num(r.get(key)) for r in self.scores) if v is not None]

    def designer_rewards(self) -> list[float]:
        rewards = self.values("designer_reward")
        if rewards:
            return rewards
        return [v for v in (_num(p.get("reward")) for p in self.proposals) if v is not None]

    def correlation(self) -> Correlation:
        pairs = [
            (r["regret"], r["oracle_regret"])
            for r in self.scores
            if r["regret"] is not None and r["oracle_regret"] is not None
        ]
        regret, oracle = [p[0] for p in pairs], [p[1] for p in pairs]
        return Correlation(regret, oracle, pearson(regret, oracle))


def read_run(store: RunStore) -> RunData:
    return RunData(
        config=store.config,
        versions=store.versions,
        created_at=store.created_at(),
        summaries=store.rounds(),
        environments=store.environments(valid_only=True),
        scores=store.scores(),
        proposals=store.proposals(),
        latest_scores=store.latest_scores(),
        episode_count=store.episode_count(),
    )


def _num(value: Any) -> float | None:
    return finite_or_none(value) if isinstance(value, (int, float)) else None


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return sum(vals) / len(vals) if vals else None
