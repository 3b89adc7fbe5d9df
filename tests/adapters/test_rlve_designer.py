"""The RLVE-style designer: reasoning-gym levels from each task's window, stepped up by the agent's accuracy."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("reasoning_gym")


def summary(task: str, level: int, win_rate: float, played: int = 1):
    from spadegym.designers.base import LevelSummary

    return LevelSummary(env_id=f"{task}-{level}", skill="Mathematical Reasoning", win_rate=win_rate, win_rate_hint=win_rate,
                        regret=0.0, score=0.0, family=f"reasoning-gym:{task}", knobs={"level": level},
                        times_played=played)


def test_the_window_moves_up_only_once_the_hardest_level_is_won_often_enough():
    from spadegym.designers.base import DesignContext
    from spadegym.designers.rlve import ACCURACY, RLVEDesigner

    designer = RLVEDesigner(seed=0, tasks=("chain_sum",))
    first = asyncio.run(designer.propose(DesignContext(skill="Mathematical Reasoning", count=3)))
    assert [c.knobs["level"] for c in first] == [0, 0, 0] and all(c.family == "reasoning-gym:chain_sum" for c in first)
    below = DesignContext(skill="Mathematical Reasoning", count=1, frontier=[summary("chain_sum", 0, ACCURACY - 0.1)])
    asyncio.run(designer.propose(below))
    assert designer.hardest["chain_sum"] == 0
    reached = DesignContext(skill="Mathematical Reasoning", count=8, mastered=[summary("chain_sum", 0, ACCURACY)])
    levels = {c.knobs["level"] for c in asyncio.run(designer.propose(reached))}
    assert designer.hardest["chain_sum"] == 1 and levels <= {0, 1} and 1 in levels
    state = designer.state_dict()
    again = RLVEDesigner(seed=5, tasks=("chain_sum",))
    again.load_state_dict(state)
    assert again.hardest == {"chain_sum": 1} and again.serial == designer.serial
