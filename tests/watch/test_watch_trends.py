"""The trend check keeps the tails of the series it reads, not every round summary: its cost and its memory stay
flat over a long run, and its answer is the one read over every summary."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from spadegym.signals.hacking import FALLS, RISE, Trends, reward_hacking
from spadegym.watch import Watch


def _every_summary(summaries: list[dict[str, Any]], window: int = 3) -> dict[str, Any]:
    """The check as it read the whole list of summaries (the reference)."""
    def series(key: str) -> list[float]:
        out = []
        for s in summaries:
            value: Any = s
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append(float(value))
        return out

    def trend(values: list[float], w: int) -> float | None:
        if len(values) < 2:
            return None
        w = max(1, min(w, len(values) // 2))
        return float(np.mean(values[-w:]) - np.mean(values[-2 * w:-w]))

    behaviour = series("diversity.new_behaviour")
    trends = {"designer_reward": trend(series("designer_reward_mean"), window),
              "heldout_success": trend(series("heldout_success"), 1),
              "diversity": trend(behaviour if len(behaviour) == len(summaries) else series("diversity.new_code"),
                                 window)}
    missing = [k for k, v in trends.items() if v is None]
    flag = bool(not missing and trends["designer_reward"] > RISE
                and trends["heldout_success"] < -FALLS["heldout_success"] and trends["diversity"] < -FALLS["diversity"])
    return {"flag": flag, **{f"trend_{k}": None if v is None else round(v, 4) for k, v in trends.items()},
            "missing": missing}


def _summaries(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s: dict[str, Any] = {"round": i, "designer_reward_mean": rng.choice([None, rng.random(), i / n])}
        if rng.random() < 0.1:  # held-out evaluations now and then
            s["heldout_success"] = rng.random()
        diversity = {"new_code": rng.random()}
        if rng.random() < 0.95:  # behaviour measured most rounds, not all
            diversity["new_behaviour"] = 1 - i / n
        s["diversity"] = diversity
        out.append(s)
    return out


def test_the_streamed_check_equals_the_check_over_every_summary_at_every_round():
    for seed in range(3):
        summaries = _summaries(300, seed)
        trends = Trends()
        for i, summary in enumerate(summaries):
            trends.add(summary)
            assert trends.check() == _every_summary(summaries[: i + 1])
        assert reward_hacking(summaries) == _every_summary(summaries)


def test_the_watch_keeps_a_bounded_tail_of_a_thousand_rounds_and_resumes_to_the_same_check():
    summaries = _summaries(1000, 7)
    watch = Watch(seed=0)
    records = [watch.assess(i, s) for i, s in enumerate(summaries)]
    assert max(len(v) for v in watch.trends.series.values()) <= 6
    resumed = Watch(seed=0)  # a run resumed at round 600: its trends are given back from the stored summaries
    resumed.resume_trends(summaries[:600])
    assert [resumed.assess(i, s) for i, s in enumerate(summaries[600:], 600)] == records[600:]
