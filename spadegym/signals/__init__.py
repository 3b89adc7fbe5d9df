"""Signals: agent advantages and designer rewards."""

from .advantages import group_advantages
from .rewards import (
    DESIGNER_REWARDS,
    DesignerReward,
    EnvStats,
    band,
    blend,
    center_by_skill,
    failure,
    feasibility,
    get_designer_reward,
    hint_regret,
    invalid_reward,
    learnability,
    learning_potential,
    oracle_regret,
    pearson,
    regret_floored,
)

__all__ = [
    "DESIGNER_REWARDS", "DesignerReward", "EnvStats", "band", "blend", "center_by_skill", "failure", "feasibility",
    "get_designer_reward", "group_advantages", "hint_regret", "invalid_reward", "learnability",
    "learning_potential", "oracle_regret", "pearson", "regret_floored",
]
