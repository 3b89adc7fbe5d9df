"""A round always plays its slots: a pool smaller than ``envs_per_round`` is played over again, so arms of a
study that differ in their pool's size train on the same number of episodes."""

from __future__ import annotations

import os
from collections import Counter

from rich.console import Console

from spadegym.loop import RunConfig, run
from spadegym.loop.steps import shares
from spadegym.store import RunStore


def test_shares_give_the_spare_slots_to_each_level_in_turn():
    assert shares(["a", "b", "c"], 3, 0) == {"a": 1, "b": 1, "c": 1}  # a full round: once each
    assert shares(["a", "b", "c"], 2, 0) == {"a": 1, "b": 1, "c": 1}  # more levels than slots: never fewer plays
    assert shares([], 4, 0) == {}
    assert shares(["a", "b", "c"], 7, 0) == {"a": 3, "b": 2, "c": 2}
    over_rounds = Counter()
    for n in range(3):
        round_ = shares(["a", "b", "c"], 4, n)
        assert sum(round_.values()) == 4
        over_rounds.update(round_)
    assert over_rounds == {"a": 4, "b": 4, "c": 4}  # the extra plays go round the pool


def test_a_fixed_pool_smaller_than_a_round_fills_it(tmp_path):
    # Every family but two held out of training: a pool of two easiest levels in rounds of three slots.
    from spadegym.families import list_families

    kept = ["take_away", "grid_maze"]
    config = RunConfig(rounds=2, designer="fixed:easy", envs_per_round=3, plays=2, hint_plays=1, group_size=1,
                       heldout={"every": 0, "levels": "ends", "seeds": 1, "families": kept[:1],
                                "suites": ["in_distribution"],
                                "unseen_families": [f.name for f in list_families() if f.name not in kept]})
    run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    with RunStore.open(tmp_path / "run") as store:
        rounds = store.rounds()
        assert [r["played"] for r in rounds] == [2, 2]  # the pool's two levels, every round
        assert [r["episodes"] for r in rounds] == [3 * 3, 3 * 3]  # three slots of two plays and one hinted
        assert store.episode_count(split="train") == 18
