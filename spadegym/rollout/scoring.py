"""A round's plays -> per-level statistics, written once for the self-play loop and the red team's prober."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np

from ..level import Level
from ..sandbox.protocol import INFRA
from ..signals import EnvStats
from .records import Episode


def score(levels: Mapping[str, Level], episodes: list[Episode], skill_ema: Mapping[str, float]) -> dict[str, EnvStats]:
    """Per-level statistics of the scored episodes (of each level of ``levels``, in order), without and with the hint.

    A level whose every play infrastructure lost (a dead actor, a remote server
    gone) has no statistics this round: it is not a loss.
    """
    by_arm: dict[tuple[str, bool], list[Episode]] = defaultdict(list)
    for ep in episodes:
        if ep.scored:
            by_arm[(ep.env_id, ep.hinted)].append(ep)

    def mean(eps: list[Episode], value: Callable[[Episode], float]) -> float:
        return float(np.mean([value(e) for e in eps])) if eps else 0.0

    fine = {ep.env_id for ep in episodes if ep.failure != INFRA}
    lost = {ep.env_id for ep in episodes} - fine  # levels whose every play infrastructure lost
    stats = {}
    for env_id, level in levels.items():
        plain, hinted = by_arm[(env_id, False)], by_arm[(env_id, True)]
        if env_id in lost:
            continue
        info = level.info
        stats[env_id] = EnvStats(
            win_rate=mean(plain, lambda e: e.success), win_rate_hint=mean(hinted, lambda e: e.success),
            mean_return=mean(plain, lambda e: e.ret), mean_return_hint=mean(hinted, lambda e: e.ret),
            plays=len(plain), plays_hint=len(hinted),
            # The gate checked that solution() wins, so its return is the maximal reward.
            oracle_return=1.0 if info.has_solution else None,
            skill_ema=skill_ema.get(info.skill or "unknown"),
        )
    return stats
