"""Designer rewards: named plain functions of one environment's play statistics.

Each function maps an ``EnvStats`` to a float. The loop picks one once from
the config (``get_designer_reward``), never by testing strings inside the loop.
A user function is named as ``"package.module:function"``.

Scales: ``regret`` lies in [-2, 2]; every other built-in lies in [0, 1]
(``oracle_regret`` in [-2, 2]). Invalid proposals always earn less than any
valid one: see ``invalid_reward``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UserError
from ..plugins import import_object
from ..specs import IMPORT, Kind, Registry, Spec, form
from . import bands


@dataclass
class EnvStats:
    """What one round of plays says about one environment."""

    win_rate: float  # no-hint success rate
    win_rate_hint: float
    mean_return: float  # no-hint mean return
    mean_return_hint: float
    plays: int = 0
    plays_hint: int = 0
    oracle_return: float | None = None  # return of the file's solution(), when it has one
    skill_ema: float | None = None  # slow EMA of this skill's no-hint win rate

    @property
    def regret(self) -> float:
        """Hint regret (SPADE's): mean return with the hint minus mean return without."""
        return self.mean_return_hint - self.mean_return

    @property
    def oracle_regret(self) -> float | None:
        """Return of the file's own solution minus the no-hint mean return; None without a solution."""
        return None if self.oracle_return is None else self.oracle_return - self.mean_return


DesignerReward = Callable[[EnvStats], float]

#: Band limits of the paper's "plateau" reward (see ``bands``).
(BAND_LOW, BAND_HIGH), BAND_FALLOFF = bands.PLATEAU, bands.PLATEAU_FALLOFF
#: Regret that saturates the blend's regret term (paper: 0.15).
REGRET_SCALE = 0.15


def hint_regret(s: EnvStats) -> float:
    """Mean return with the hint minus mean return without (SPADE's regret)."""
    return s.regret


def regret_floored(s: EnvStats) -> float:
    """Regret floored at 0: an environment where the hint hurts is no better than a useless one."""
    return max(0.0, hint_regret(s))


def band(s: EnvStats) -> float:
    """The solve-rate plateau: 1 for a no-hint win rate in [0.4, 0.6], linear to 0 over 0.25 outside."""
    p = s.win_rate
    distance = max(BAND_LOW - p, p - BAND_HIGH, 0.0)
    return max(0.0, 1.0 - distance / BAND_FALLOFF)


def blend(s: EnvStats) -> float:
    """The paper's deployed reward: 0.4 * clip(regret / 0.15, 0, 1) + 0.6 * band."""
    return 0.4 * min(1.0, max(0.0, hint_regret(s) / REGRET_SCALE)) + 0.6 * band(s)


def learning_potential(s: EnvStats) -> float:
    """Distance of the win rate from the slow EMA of its skill's win rate."""
    reference = s.skill_ema if s.skill_ema is not None else 0.5
    return abs(s.win_rate - reference)


def learnability(s: EnvStats) -> float:
    """p (1 - p), scaled to [0, 1]: highest for environments solved half the time."""
    return 4.0 * s.win_rate * (1.0 - s.win_rate)


def oracle_regret(s: EnvStats) -> float:
    """Return of the file's own solution minus the agent's no-hint return (exact regret).

    Without a solution it falls back to hint regret, so the choice never fails mid-run.
    """
    return s.regret if s.oracle_regret is None else s.oracle_regret


def feasibility(s: EnvStats) -> float:
    """How surely the level can be won: 1 with a winning ``solution()`` (the gate played it), else the hinted win rate."""
    if s.oracle_return is not None and s.oracle_return > 0:
        return 1.0
    return s.win_rate_hint


def failure(s: EnvStats) -> float:
    """Red-team reward: the agent's no-hint failure rate times feasibility (failing a level nobody can win earns 0)."""
    return (1.0 - s.win_rate) * feasibility(s)


DESIGNER_REWARDS: dict[str, DesignerReward] = {
    "regret": hint_regret,
    "regret_floored": regret_floored,
    "band": band,
    "blend": blend,
    "learning_potential": learning_potential,
    "learnability": learnability,
    "oracle_regret": oracle_regret,
    "failure": failure,
}


class UnknownReward(UserError, ValueError):
    """A designer reward spec that names nothing usable (the message is one sentence)."""


def _own_reward(spec: Spec, seed: int, options: Any) -> DesignerReward:
    try:
        fn = import_object(spec.text, "designer_reward")
    except ValueError as exc:
        raise UnknownReward(str(exc)) from None
    if not callable(fn):
        raise UnknownReward(f"designer_reward '{spec}' is not callable; name a function of EnvStats.")
    return fn


#: The designer rewards by name, and your own as ``package.module:function``.
REWARDS: Registry[DesignerReward] = Registry(
    "designer_reward", [Kind(name, form("designer_reward", name), lambda spec, seed, options, fn=fn: fn)
                        for name, fn in DESIGNER_REWARDS.items()],
    error=UnknownReward, imports=Kind(IMPORT, form("designer_reward", IMPORT), _own_reward))


def get_designer_reward(name: str | Spec) -> DesignerReward:
    """A built-in reward by name, or a user function given as ``package.module:function``."""
    return REWARDS.make(name)


def center_by_skill(rewards: Sequence[float], skills: Sequence[str]) -> list[float]:
    """Designer advantages: each reward minus the mean of its skill's rewards this round."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r, k in zip(rewards, skills):
        groups[k].append(r)
    means = {k: float(np.mean(v)) for k, v in groups.items()}
    return [r - means[k] for r, k in zip(rewards, skills)]


def invalid_reward(valid_rewards: Sequence[float]) -> float:
    """The reward of an invalid proposal: one unit below the lowest valid reward and below 0.

    So an invalid proposal can never tie or beat a valid one, whatever the reward's scale.
    """
    return min([*valid_rewards, 0.0]) - 1.0


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Correlation, or None when undefined (fewer than 3 pairs or no spread)."""
    if len(xs) < 3:
        return None
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    if x.std() == 0 or y.std() == 0:
        return None
    value = float(np.corrcoef(x, y)[0, 1])
    return value if math.isfinite(value) else None
