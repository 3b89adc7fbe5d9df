"""Is the designer gaming its reward? A per-round check over the run's round summaries.

A trained designer can drift toward levels that pay it well but teach
nothing (learnable-but-useless tasks). The tell: its reward rises while the
agent's held-out success and the diversity of new levels (of their behaviour, where the run measures it;
else of their code) fall. The check
compares the mean of the latest ``window`` rounds with the ``window`` rounds
before (held-out success: the last two evaluations), and flags the run when
the reward rose and both others fell, each by more than its noise (``RISE``,
``FALLS``: a held-out suite of a few hundred episodes moves by a few points
between evaluations of an honest run). A figure the run does not measure (no
held-out evaluation during the run, no diversity) is named in ``missing``, and
the run is not flagged: a rising reward with one falling figure is the
normal course of a curriculum that moves to harder levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: How much the designer reward must rise, and held-out success and new-level diversity fall, to count.
RISE = 0.02
FALLS = {"heldout_success": 0.05, "diversity": 0.02}


def _value(summary: dict[str, Any], key: str) -> float | None:
    value: Any = summary
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _trend(values: list[float], window: int) -> float | None:
    """Mean of the last ``window`` values minus the mean of the ``window`` before (None: too few)."""
    if len(values) < 2:
        return None
    w = max(1, min(window, len(values) // 2))
    return float(np.mean(values[-w:]) - np.mean(values[-2 * w:-w]))


#: The summary figures the check reads.
SERIES = ("designer_reward_mean", "heldout_success", "diversity.new_behaviour", "diversity.new_code")


class Trends:
    """The series the check reads, fed one round summary at a time and kept no longer than it reads them.

    A trend reads the last ``2 * window`` values of a series (held-out success: the last two), so that much of
    each is kept, with the number of rounds and of rounds that measured behaviour diversity: the check of
    round 1,000 costs what the check of round 10 does, and equals the check over every summary.
    """

    def __init__(self, window: int = 3):
        self.window = window
        self.series: dict[str, list[float]] = {key: [] for key in SERIES}
        self.rounds = 0
        self.behaviour_rounds = 0  # rounds whose summary has a behaviour diversity

    @classmethod
    def over(cls, summaries: Sequence[dict[str, Any]], window: int = 3) -> Trends:
        """The series of ``summaries``, in order."""
        trends = cls(window)
        for summary in summaries:
            trends.add(summary)
        return trends

    def add(self, summary: dict[str, Any]) -> None:
        self.rounds += 1
        for key, kept in self.series.items():
            value = _value(summary, key)
            if value is None:
                continue
            kept.append(value)
            del kept[: -(2 if key == "heldout_success" else 2 * self.window)]
            if key == "diversity.new_behaviour":
                self.behaviour_rounds += 1

    def check(self) -> dict[str, Any]:
        """The trends of designer reward, held-out success and new-level diversity, and the flag."""
        reward = _trend(self.series["designer_reward_mean"], self.window)
        heldout = _trend(self.series["heldout_success"], 1)
        # Diversity of behaviour where the run measures it (rewording raises the diversity of code, not this).
        behaviour = self.behaviour_rounds == self.rounds
        diversity = _trend(self.series["diversity.new_behaviour" if behaviour else "diversity.new_code"],
                           self.window)
        trends = {"designer_reward": reward, "heldout_success": heldout, "diversity": diversity}
        missing = [k for k, v in trends.items() if v is None]
        flagged = bool(not missing and reward > RISE and heldout < -FALLS["heldout_success"]  # type: ignore[operator]
                       and diversity < -FALLS["diversity"])  # type: ignore[operator]
        return {"flag": flagged, **{f"trend_{k}": (None if v is None else round(v, 4)) for k, v in trends.items()},
                "missing": missing}


def reward_hacking(summaries: Sequence[dict[str, Any]], window: int = 3) -> dict[str, Any]:
    """The trends of designer reward, held-out success and new-level diversity over ``summaries``, and the flag."""
    return Trends.over(summaries, window).check()
