"""Paired differences over run seeds and their 95% t interval: the statistic every curriculum study reports.

    from paired import paired          # benchmarks/ is on the path of a benchmark run as a script
    paired([0.4, 0.5, 0.6], [0.3, 0.5, 0.4])   # {'mean': 0.1, 'per_seed': [...], 'ci95': [...]}

The arms of one seed share their held-out instances and their seed, so the
per-seed difference cancels what the seed alone moves; the interval is
Student's t with n - 1 degrees of freedom over those differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Two-sided 95% quantiles of Student's t by degrees of freedom (past the table, its last entry).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def paired(a: list[float], b: list[float]) -> dict[str, Any]:
    """The mean of ``a - b`` over paired seeds and its 95% t interval (None with one seed)."""
    if len(a) != len(b):
        raise ValueError(f"paired figures need one value per seed on both sides; got {len(a)} and {len(b)}.")
    d = np.array(a, dtype=float) - np.array(b, dtype=float)
    out: dict[str, Any] = {"mean": round(float(d.mean()), 4), "per_seed": [round(float(x), 4) for x in d]}
    if len(d) > 1:
        df = len(d) - 1
        t = T95[max(k for k in T95 if k <= df)]  # between tabulated degrees of freedom, the wider interval
        half = t * float(d.std(ddof=1)) / float(np.sqrt(len(d)))  # plain floats: the figures go to JSON
        out["ci95"] = [round(float(d.mean()) - half, 4), round(float(d.mean()) + half, 4)]
    return out
