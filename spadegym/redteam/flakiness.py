"""Is a failure real? Replay it on fresh seeds and give its failure rate with a 95% interval.

A case enters the suite only when the lower end of the interval reaches
``min_failure_rate``: a target that fails a level now and then, by chance,
does not make a regression test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .probe import Probe, Prober

#: z of a two-sided 95% interval.
Z95 = 1.959964


def wilson_interval(failures: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (sound for small counts and rates near 0 or 1)."""
    if total <= 0:
        return 0.0, 1.0
    p = failures / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def confirms(failures: int, total: int, min_failure_rate: float) -> bool:
    """Whether ``failures`` of ``total`` replays make a case: the lower end of the 95% interval of the failure
    rate reaches ``min_failure_rate``."""
    return total > 0 and wilson_interval(failures, total)[0] >= min_failure_rate


@dataclass
class Confirmation:
    """The target's failure rate on fresh seeds, and the seeds it lost (a case is scored on them)."""

    failure_rate: float
    interval: tuple[float, float]
    plays: int
    lost_seeds: list[int]
    won_seeds: list[int]
    kept: bool
    probe: Probe | None = None  # the replays themselves

    def case_seeds(self, count: int) -> list[int]:
        """The seeds a case is scored on: the lost ones first (it is a test of this failure)."""
        return (self.lost_seeds + [s for s in self.won_seeds if s not in self.lost_seeds])[:count]


async def confirm(prober: Prober, source: str, hint: str | None, *, key: str, seeds: int, plays: int,
                  min_failure_rate: float) -> Confirmation:
    """Replay ``source`` on ``seeds`` fresh seeds, ``plays`` times each."""
    fresh = prober.hunt_seeds(seeds, salt=f"confirm:{key}")
    probe = await prober.probe(source, hint, seeds=fresh, repeat=plays)
    plain = [e for e in probe.episodes if not e.hinted and e.scored]
    lost = [e.seed for e in plain if not e.success]
    low, high = wilson_interval(len(lost), len(plain))
    lost_seeds = list(dict.fromkeys(lost))
    return Confirmation(
        failure_rate=len(lost) / len(plain) if plain else 0.0, interval=(round(low, 4), round(high, 4)),
        plays=len(plain), lost_seeds=lost_seeds, won_seeds=[s for s in fresh if s not in lost_seeds],
        kept=probe.valid and confirms(len(lost), len(plain), min_failure_rate), probe=probe,
    )
