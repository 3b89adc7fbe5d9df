"""The parts of a design round that the self-play loop and the red team both use, written once below both.

    fresh_slots    a round's new levels split over its skills (the remainder rotates)
    level_summary  what a designer is shown of a level the buffer holds
    told           what each judged proposal earned: a played level's reward centred within its skill,
                   a refused one less than any valid one
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..curriculum import LevelBuffer, LevelRecord
from ..signals import EnvStats, center_by_skill, invalid_reward
from .base import Feedback, LevelSummary
from .judge import Proposal, share


def fresh_slots(n: int, count: int, active: int, skills: int) -> list[int]:
    """Split round ``n``'s ``count`` new levels over its ``active`` skills (of ``skills``); the remainder rotates.

    Giving the remainder to the first active skills every round favoured the
    skills that open a rotation: with 4 slots over 3 of 6 skills, two skills
    got twice the fresh levels of the other four for the whole run.
    """
    cycle = skills // math.gcd(skills, active)  # rounds until the same skills are active again
    return share(count, active, turn=n // cycle)  # turn: times this set of skills was active before


def level_summary(buffer: LevelBuffer, r: LevelRecord) -> LevelSummary:
    """What a designer is shown of a level the buffer holds (in a run and in a red-team search)."""
    source = buffer.level(r.env_id).source
    return LevelSummary(r.env_id, r.skill, r.win_rate, r.win_rate_hint, r.regret, r.score, family=r.family,
                        knobs=r.knobs, code_excerpt=(source or "")[:1500], source=source, depth=r.depth,
                        retired=buffer.retired(r), times_played=r.times_played)


def told(proposals: Sequence[Proposal], raw: Mapping[str, float], stats: Mapping[str, EnvStats],
         details: Mapping[str, Mapping[str, Any]] | None = None) -> list[Feedback]:
    """What each candidate earned: a played level its ``raw`` reward centred within its skill, a refused
    proposal less than any valid one (so does a repaired one whose designer is rewarded on its first attempt,
    ``Candidate.reward_as_invalid``). ``details``: more a level's feedback carries, by name."""
    valid = [p for p in proposals if p.valid and p.name in raw]
    centred = center_by_skill([raw[p.name] for p in valid], [p.candidate.skill for p in valid])
    floor = invalid_reward(centred)
    centred = [floor if p.candidate.reward_as_invalid else r for p, r in zip(valid, centred)]
    feedback = [Feedback(p.candidate.candidate_id, r, True, p.candidate.lineage.operator,
                         {"raw": raw[p.name], "env_id": p.name, "win_rate": stats[p.name].win_rate,
                          "regret": stats[p.name].regret, **(details or {}).get(p.name, {})}, **_origin(p))
                for p, r in zip(valid, centred)]
    feedback += [Feedback(p.candidate.candidate_id, floor, False, p.candidate.lineage.operator,
                          {"reason": p.refusal}, **_origin(p)) for p in proposals if not p.valid]
    return feedback


def _origin(p: Proposal) -> dict[str, Any]:
    """Who proposed the candidate, as composite designers route its reward (typed fields, never its id's text)."""
    return {"part": p.candidate.part, "pooled": p.candidate.pool_file is not None}
