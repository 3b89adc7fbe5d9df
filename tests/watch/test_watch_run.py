"""The watch in a run: levels that game a reward are flagged by what they do, within a few rounds, and earn
nothing once found; an honest source beside them is not flagged."""

from __future__ import annotations

import os

from rich.console import Console

from spadegym.loop import RunConfig, run
from spadegym.loop.callbacks import summary_line
from spadegym.report import write_report
from spadegym.store import RunStore

TINY = {"envs_per_round": 8, "plays": 4, "hint_plays": 4, "group_size": 2, "skills_per_round": 2,
        "buffer": {"replay_fraction": 0.5, "min_fill": 4}, "heldout": {"every": 0, "levels": "easiest", "seeds": 1,
                                                                         "families": ["button_lock"]},
        "watch": {"min_levels": 3}}  # a short run proposes few levels per source


def test_gaming_sources_are_flagged_by_mechanism_and_priced_out(tmp_path):
    config = RunConfig(rounds=5, designer="watch_tricks.bundle:Bundle", **TINY)
    result = run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    watch = result.summaries[-1].designer_watch
    kinds = {source: record["kinds"] for source, record in watch["designers"].items()}
    assert "no_agency" in kinds["dice"]
    assert "hint_only" in kinds["cabinet"]
    assert "hopeless" in kinds["keypad"]
    assert kinds["honest"] == []
    assert watch["flag"] is True and set(watch["caught"]) == {"dice", "cabinet", "keypad"}
    with RunStore.open(tmp_path / "run") as store:
        state = store.load_state("watch")["levels"]
        found = {e for e, ev in state.items() if ev["designer"] in ("dice", "cabinet") and ev["history"]
                 and e in {s["env_id"] for s in store.scores(round=4)}}
        rewards = {s["env_id"]: s["designer_reward"] for s in store.scores(round=4)}
    assert found and all(rewards[e] <= 0 for e in found)  # a gaming level earns nothing once found
    assert "REWARD-HACKING WATCH: cosmetic, hint_only, hopeless, no_agency" in summary_line(result.summaries[-1])
    page = write_report(tmp_path / "run").read_text(encoding="utf-8")
    assert "<h2>Reward-hacking watch</h2>" in page
    assert "<td class=text>cabinet</td><td class=text>hint_only</td>" in page


def test_probe_plays_leave_an_honest_run_as_it_was(tmp_path):
    # The probes play on workers of their own and draw from no generator of the run's: a run the watch never
    # flags has the round figures it would have without them.
    small = {"envs_per_round": 4, "plays": 4, "hint_plays": 4, "group_size": 2, "heldout": {"every": 0, "seeds": 1,
             "levels": "easiest", "families": ["button_lock"]}}
    quiet = Console(file=open(os.devnull, "w"))  # noqa: SIM115
    watched = run(RunConfig(rounds=2, **small), tmp_path / "a", console=quiet, report=False).summaries
    unprobed = run(RunConfig(rounds=2, watch={"probe_seeds": 0, "price": False}, **small), tmp_path / "b",
                   console=quiet, report=False).summaries
    keys = ("win_rate", "win_rate_hint", "regret_mean", "designer_reward_mean", "learner", "heldout", "buffer")
    assert [s.designer_watch["kinds"] for s in watched] == [[], []]
    assert [[getattr(s, k) for k in keys] for s in watched] == [[getattr(s, k) for k in keys] for s in unprobed]
    assert watched[0].diversity["new_behaviour"] is not None and unprobed[0].diversity["new_behaviour"] is None
