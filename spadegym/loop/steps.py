"""The pure steps of a round: functions of plain data, each testable on hand-made episodes.

    shares      a round's levels and slots -> how many times each is played (a pool smaller than a round is
                played over again, so every arm of a study trains on the same number of episodes)
    feedback    statistics -> raw designer rewards, and the centred reward each candidate earned
                (``designers.round.told``, which the red team's round uses too)
    summarize   a finished round's record -> its RoundSummary
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..designers.base import Feedback
from ..designers.judge import Proposal
from ..designers.round import told
from ..signals import EnvStats, bands, pearson
from ..store.record import RoundRecord, RoundSummary
from ..watch.rules import priced


def shares(ids: Sequence[str], slots: int, round_: int) -> dict[str, int]:
    """How many slots of the round each level fills: one each, and the slots left over go to the levels in turn.

    Only a round with fewer distinct levels than slots (a fixed pool smaller than
    ``envs_per_round``, a designer that came up short with the buffer not yet full)
    plays a level more than once; the turn starts further on each round, so over a
    run every level gets the same extra plays.
    """
    out = dict.fromkeys(ids, 1)
    if not ids:
        return out
    start = round_ * max(slots - len(ids), 0)
    for k in range(max(slots - len(ids), 0)):
        out[ids[(start + k) % len(ids)]] += 1
    return out


def feedback(proposals: list[Proposal], stats: Mapping[str, EnvStats],
             reward: Callable[[EnvStats], float],
             shares: Mapping[str, float] | None = None) -> tuple[dict[str, float], list[Feedback]]:
    """Raw designer rewards per level played, and per candidate the reward centred within its skill (``told``).

    ``shares``: what each level keeps of a positive reward (the watch's pricing; 1 where absent).
    """
    raw = {env_id: priced(float(reward(s)), (shares or {}).get(env_id, 1.0)) for env_id, s in stats.items()}
    return raw, told(proposals, raw, stats)


def summarize(record: RoundRecord, *, skills: Mapping[str, str], learner: Mapping[str, object],
              heldout: Mapping[str, object], buffer: Mapping[str, object], buffer_size: int,
              seconds: float, diversity: Mapping[str, object] | None = None) -> RoundSummary:
    """The round's figures; ``skills`` names the skill of each level played that the buffer still holds."""
    stats = list(record.stats.values())
    hinted = [s for s in stats if s.plays_hint]  # a level without hinted plays has no hint figures, not zeros
    win = [s.win_rate for s in stats]
    oracle = [(s.regret, s.oracle_regret) for s in hinted if s.oracle_regret is not None]
    difficulty = [d for d in record.difficulty.values() if d is not None]
    new_difficulty = [d for e, d in record.difficulty.items() if d is not None and e not in record.replayed]

    def mean(xs: list[float]) -> float | None:
        return round(float(np.mean(xs)), 4) if xs else None

    return RoundSummary(
        round=record.round, seconds=round(seconds, 3), episodes=len(record.episodes),
        proposals=len(record.proposals), valid=sum(p.valid for p in record.proposals),
        refusals=dict(Counter(p.refusal for p in record.proposals if p.refusal is not None)),
        played=len(record.chosen), replayed=len(record.replayed),
        win_rate=mean(win), win_rate_hint=mean([s.win_rate_hint for s in hinted]),
        return_mean=mean([s.mean_return for s in stats]), return_mean_hint=mean([s.mean_return_hint for s in hinted]),
        regret_mean=mean([s.regret for s in hinted]), designer_reward_mean=mean(list(record.rewards.values())),
        band_fraction=mean([float(bands.LEARNABLE[0] <= w <= bands.LEARNABLE[1]) for w in win]),
        difficulty_mean=mean(difficulty), difficulty_new_mean=mean(new_difficulty),
        skill_mix=dict(Counter(skills[e] for e in record.chosen if e in skills)),
        hint_oracle_corr=pearson([a for a, _ in oracle], [b for _, b in oracle]),
        episode_failures=dict(Counter(e.failure for e in record.episodes if e.failure)),
        buffer=dict(buffer), buffer_size=buffer_size, diversity=dict(diversity or {}),
        learner={k: v for k, v in learner.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
        heldout=dict(heldout),
    )
