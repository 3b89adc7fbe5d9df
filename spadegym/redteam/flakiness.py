"""Is a failure real? Replay it on fresh seeds and give its failure rate with a 95% interval.

A case enters the suite only when the lower end of the interval reaches
``min_failure_rate``: a target that fails a level now and then, by chance,
does not make a regression test. The replays stop once those played settle
that verdict (the rest could not change it), so the rate and interval a case
records may rest on fewer plays than were asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..level import Params
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
    unplayed: list[int] = field(default_factory=list)  # fresh seeds left unplayed once the verdict was settled

    def case_seeds(self, count: int) -> list[int]:
        """The seeds a case is scored on: the lost ones first (it is a test of this failure), then the won ones and
        those left unplayed."""
        return (self.lost_seeds + [s for s in self.won_seeds + self.unplayed if s not in self.lost_seeds])[:count]


def fewest_losses(total: int, min_failure_rate: float) -> int:
    """The fewest lost replays of ``total`` that make a case (``total + 1`` when none can)."""
    return next((k for k in range(total + 1) if confirms(k, total, min_failure_rate)), total + 1)


def deciding_seeds(seeds: int, plays: int, min_failure_rate: float) -> int:
    """The fewest of ``seeds`` fresh seeds whose replays can settle the verdict of all of them: enough plays for
    the fewest losses that make a case, and for the most wins that leave it none."""
    total = seeds * plays
    fewest = fewest_losses(total, min_failure_rate)
    return min(seeds, math.ceil(max(fewest, total - fewest + 1) / plays))


async def confirm(prober: Prober, source: str, hint: str | None, *, key: str, seeds: int, plays: int,
                  min_failure_rate: float, params: Params | None = None) -> Confirmation:
    """Replay ``source`` on ``seeds`` fresh seeds, ``plays`` times each: first as many seeds as could settle the
    verdict, then one seed at a time while it is open, so the verdict is the one all the replays would give (a
    case needs at least k losses of them all) for fewer plays of the target, which may be a paid model."""
    fresh, total = prober.hunt_seeds(seeds, salt=f"confirm:{key}"), seeds * plays
    probe = await prober.probe(source, hint, seeds=fresh[:deciding_seeds(seeds, plays, min_failure_rate)], repeat=plays,
                               params=params)
    verdict = None
    while probe.valid and len(probe.seeds) < seeds:
        if (verdict := _settled(probe, total, min_failure_rate)) is not None:
            break
        probe = await prober.play_more(probe, hint, [fresh[len(probe.seeds)]], repeat=plays)
    plain = [e for e in probe.episodes if not e.hinted and e.scored]
    lost = [e.seed for e in plain if not e.success]
    low, high = wilson_interval(len(lost), len(plain))
    lost_seeds = list(dict.fromkeys(lost))
    return Confirmation(
        failure_rate=len(lost) / len(plain) if plain else 0.0, interval=(round(low, 4), round(high, 4)),
        plays=len(plain), lost_seeds=lost_seeds, won_seeds=[s for s in probe.seeds if s not in lost_seeds],
        kept=probe.valid and (confirms(len(lost), len(plain), min_failure_rate) if verdict is None else verdict),
        probe=probe, unplayed=[s for s in fresh if s not in probe.seeds],
    )


def _settled(probe: Probe, total: int, min_failure_rate: float) -> bool | None:
    """``verdict_so_far`` of the plays made; None while one went unscored (that changes the count it is taken over)."""
    episodes = [e for e in probe.episodes if not e.hinted]
    if not all(e.scored for e in episodes):
        return None
    return verdict_so_far(sum(not e.success for e in episodes), len(episodes), total, min_failure_rate)


def verdict_so_far(lost: int, played: int, total: int, min_failure_rate: float) -> bool | None:
    """Whether ``total`` replays will make a case, when ``lost`` of the first ``played`` already settle it (the
    rest could neither make nor unmake it); None when they do not."""
    if confirms(lost, total, min_failure_rate):
        return True
    return False if not confirms(lost + total - played, total, min_failure_rate) else None
