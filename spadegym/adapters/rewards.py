"""Which reward an adapter pays on each step.

spadegym's return is an episode's terminal reward, not the sum of its rewards
(``envfile.episode_return``). An adapter pays either the environment's own
reward of each step (``"step"``, the default: what the file returns), or 0 on
every step and the episode's return on its last (``"return"``), so that a
wrapper that sums rewards (Gymnasium's ``RecordEpisodeStatistics``) shows
spadegym's return. Either way ``info["return"]`` holds the return at the end.
"""

from __future__ import annotations

from typing import Literal

from .session import Transition

RewardMode = Literal["step", "return"]
REWARD_MODES: tuple[RewardMode, ...] = ("step", "return")


def reward_mode(rewards: str) -> RewardMode:
    """``rewards`` if it names a mode; one sentence otherwise."""
    if rewards not in REWARD_MODES:
        raise ValueError(f"rewards must be 'step' (each step's own reward) or 'return' (the episode's return on its "
                         f"last step), got {rewards!r}")
    return rewards  # type: ignore[return-value]


def paid_reward(moved: Transition, rewards: RewardMode) -> float:
    """The reward to pay for ``moved`` under ``rewards``."""
    if rewards == "return":
        return float(moved.info.get("return", 0.0)) if moved.done else 0.0
    return float(moved.reward)
