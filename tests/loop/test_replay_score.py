"""Replay by no-hint learning progress: the buffer ranks levels by it instead of the designer reward."""

from __future__ import annotations

import os

from rich.console import Console

from spadegym.curriculum import learning_progress
from spadegym.loop import RunConfig, run
from spadegym.store import RunStore

TINY = {"envs_per_round": 4, "plays": 4, "hint_plays": 4, "group_size": 4,  # held out: one family (not checked here)
        "heldout": {"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"]}}


def test_levels_are_scored_by_their_no_hint_learning_progress(tmp_path) -> None:
    config = RunConfig(rounds=2, seed=3, buffer={"replay_score": "learning_progress", "window": 1}, **TINY)
    run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    with RunStore.open(tmp_path / "run") as store:
        levels = store.load_state("buffer")["levels"]
        first = {e["env_id"] for e in store.environments() if e["round"] == 0}
        for env_id in first:  # a level of round 0: its skill had no running win rate yet (0.5)
            returns = [e["ret"] for e in store.episodes(env_id=env_id, round=0, split="train", hinted=False)
                       if e["failure"] is None]
            assert levels[env_id]["history"][0][3] == round(learning_progress(returns, 0.5), 4)
    assert all(level["score"] >= 0 for level in levels.values())
