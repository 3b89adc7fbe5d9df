"""What the search expects the target to do on a family level it has not played: a per-family logistic model.

Every play the red team makes of a family level (a proposal's, a shrink step's, a confirmation's)
is evidence about the target, whatever asked for it. ``PlayModel`` fits, per family, the chance
that the target wins one play from where the level sits: each difficulty knob's place on its ladder
and each seen variation choice. A search that proposes the levels it expects lost spends fewer
proposals on levels the target wins, most of them near a level it wins now and then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..families import DIMENSIONS, FamilyError, get_family
from .clusters import SEEN_DIMENSIONS, level_features
from .flakiness import fewest_losses

#: Levels of a family played before its model is trusted (fewer: no prediction).
MIN_LEVELS = 3
#: L2 weight on the coefficients (a Gaussian prior at 0): a few plays must not make a knob decisive.
PRIOR = 1.0
NEWTON_STEPS = 20
#: The seen variation choices away from the default, one indicator each.
_CHOICES = tuple((d.name, c) for d in DIMENSIONS if d.name in SEEN_DIMENSIONS for c in d.choices if c != d.default)


def features(family: str, knobs: dict[str, Any]) -> np.ndarray:
    """Each seen difficulty knob's place on its ladder (0 easiest, 1 hardest), one indicator per seen variation
    choice away from the default, and a constant."""
    ladders, varied = level_features(family, knobs)
    fam = get_family(family)
    place = [i / max(1, len(fam.ladder(k)) - 1) for k, i in sorted(ladders.items())]
    return np.array(place + [float(varied.get(name) == choice) for name, choice in _CHOICES] + [1.0])


class Played(NamedTuple):
    """One level's plays: where it sits (``features``), and the target's wins of its plays."""

    features: np.ndarray
    wins: float
    plays: int


@dataclass
class PlayModel:
    """Per family: the levels played and the logistic fit of a play's win."""

    played: dict[str, list[Played]] = field(default_factory=dict)
    _fits: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # per family, until its next play

    def observe(self, family: str, knobs: dict[str, Any], wins: float, plays: int) -> None:
        if plays <= 0:
            return
        try:
            x = features(family, knobs)
        except FamilyError:
            return  # a level of an older family version: nothing the search will propose
        self.played.setdefault(family, []).append(Played(x, float(wins), int(plays)))
        self._fits.pop(family, None)

    def win_chance(self, family: str, knobs: dict[str, Any]) -> float | None:
        """The fitted chance that the target wins one play of this level; None before ``MIN_LEVELS`` levels."""
        if len(self.played.get(family, ())) < MIN_LEVELS:
            return None
        if family not in self._fits:
            self._fits[family] = _fit(self.played[family])
        return float(1.0 / (1.0 + np.exp(-features(family, knobs) @ self._fits[family])))

    def lost_chance(self, family: str, knobs: dict[str, Any], plays: int, max_win_rate: float) -> float | None:
        """The chance the target wins at most ``max_win_rate`` of ``plays`` plays (the level counts as failed)."""
        p = self.win_chance(family, knobs)
        return None if p is None else _failed(p, plays, max_win_rate)

    def kept_chance(self, family: str, knobs: dict[str, Any], judging: Judging) -> float | None:
        """The chance the level counts as failed and its replays on fresh seeds confirm it: a failure that
        fails its confirmation by chance finds no case, however likely the level was to fail once."""
        p = self.win_chance(family, knobs)
        if p is None:
            return None
        confirmed = _at_least(judging.fewest_confirming_losses(), judging.confirm_plays, 1 - p)
        return _failed(p, judging.plays, judging.max_win_rate) * confirmed


@dataclass(frozen=True)
class Judging:
    """How the hunt judges a level: failed when the target wins at most ``max_win_rate`` of ``plays``, a case when
    the lower end of the 95% interval of its failure rate over ``confirm_plays`` fresh plays reaches
    ``min_failure_rate`` (``flakiness.confirm``)."""

    plays: int = 4
    max_win_rate: float = 0.5
    confirm_plays: int = 12
    min_failure_rate: float = 0.3

    def fewest_confirming_losses(self) -> int:
        """The fewest lost replays that make a case (``confirm_plays + 1`` when none can)."""
        return fewest_losses(self.confirm_plays, self.min_failure_rate)


def _failed(win: float, plays: int, max_win_rate: float) -> float:
    """The chance a target that wins a play with chance ``win`` wins at most ``max_win_rate`` of ``plays``."""
    return _at_least(plays - math.floor(max_win_rate * plays + 1e-9), plays, 1 - win)


def _at_least(k: int, n: int, p: float) -> float:
    """The chance of at least ``k`` successes in ``n`` trials of chance ``p``."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(max(0, k), n + 1))


def _fit(rows: list[Played]) -> np.ndarray:
    """Maximum a posteriori logistic regression on binomial counts (Newton's method)."""
    x = np.stack([r.features for r in rows])
    wins = np.array([r.wins for r in rows])
    plays = np.array([r.plays for r in rows], dtype=float)
    beta = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        grad = x.T @ (wins - plays * p) - PRIOR * beta
        hess = (x.T * (plays * p * (1 - p))) @ x + PRIOR * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.abs(step).max() < 1e-6:
            break
    return beta
