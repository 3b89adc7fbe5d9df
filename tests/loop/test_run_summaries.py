"""A run keeps no per-round history of its own: the summaries it returns are read back from its store at the end,
so a long run's memory does not grow with its rounds (``benchmarks/long_run.py``), and they are what each round's
callbacks were given."""

from __future__ import annotations

from spadegym.loop import RunConfig, run
from spadegym.loop.callbacks import RunCallback
from spadegym.store.record import RoundSummary

CHEAP = {"agent": "random", "envs_per_round": 2, "plays": 2, "hint_plays": 2, "group_size": 2,
         "heldout": {"every": 0, "levels": "easiest", "seeds": 1, "families": ["button_lock"]}}


class Seen(RunCallback):
    def __init__(self) -> None:
        self.summaries: list[dict] = []

    def on_round(self, summary: RoundSummary) -> None:
        self.summaries.append(summary.to_dict())


def test_the_summaries_a_run_returns_are_those_its_rounds_reported(tmp_path):
    seen = Seen()
    result = run(RunConfig(rounds=2, **CHEAP), tmp_path / "run", callbacks=[seen], report=False)
    assert [s.to_dict() for s in result.summaries] == seen.summaries
    assert result.summaries[-1].heldout["heldout_success"] is not None  # held-out figures back in their field


def test_a_stored_summary_reads_back_to_the_same_summary():
    summary = RoundSummary(3, win_rate=0.5, refusals={"duplicate": 1}, heldout={"heldout_success": 0.25},
                           timings={"play": 1.0}, infrastructure={"actors_lost": 1}, designer_watch={"flag": False})
    assert RoundSummary.from_dict(summary.to_dict()) == summary
    assert RoundSummary.from_dict(RoundSummary(4).to_dict()) == RoundSummary(4)
