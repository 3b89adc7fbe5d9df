"""Agent advantages: returns z-scored within each group of plays (GRPO)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

import numpy as np


def group_advantages(returns: Sequence[float], groups: Sequence[Hashable], eps: float = 1e-6) -> np.ndarray:
    """(return - group mean) / (group std + eps); a group with no spread gets zeros."""
    r = np.asarray(returns, dtype=np.float64)
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    adv = np.zeros_like(r)
    for idx in members.values():
        values = r[idx]
        std = values.std()
        if std > eps:
            adv[idx] = (values - values.mean()) / (std + eps)
    return adv
