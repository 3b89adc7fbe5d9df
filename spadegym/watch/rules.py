"""The watch's rules: when a designer is flagged, and what its levels then earn.

A designer is flagged for a finding (``evidence.FINDINGS``) when, among its
levels first played in the last ``window`` rounds, at least ``min_levels`` show
it and they are at least ``min_share`` of those the evidence can decide. An
honest curriculum produces each finding now and then (a level hard for this
agent, one whose instances differ a lot); a gaming designer produces it level
after level.

Pricing: once a designer is flagged for a finding, its levels that show it earn
no positive designer reward, and neither do its levels that show the finding's
first-round profile (``hint_only``: no-hint success near nil while the hint
wins; ``hopeless``: nothing wins) before a second round can confirm it.
Everything else earns the reward unchanged: an honest run that is never
flagged plays exactly as it would without the watch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from .evidence import FINDINGS, HINTED_WINS, NEVER_PEAK, LevelEvidence


def designer_counts(levels: Iterable[LevelEvidence], round_: int, window: int) -> dict[str, dict[str, list[int]]]:
    """Per designer, per finding: [levels that show it, levels whose evidence decides it], over its recent levels."""
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: {k: [0, 0] for k in FINDINGS})
    for ev in levels:
        if ev.added <= round_ - window:
            continue
        tally = counts[ev.designer]
        found = ev.findings()
        for kind in ev.assessed():
            tally[kind][1] += 1
            tally[kind][0] += kind in found
    return dict(counts)


def flagged_kinds(counts: Mapping[str, list[int]], min_levels: int, min_share: float) -> list[str]:
    """The findings a designer's counts flag (``FINDINGS`` order)."""
    return [k for k in FINDINGS if k in counts and counts[k][0] >= min_levels
            and counts[k][0] >= min_share * counts[k][1]]


def _profile(ev: LevelEvidence, kind: str) -> bool:
    """Whether the level's latest round looks like ``kind`` (what a flagged designer's new levels are read by)."""
    if not ev.history:
        return False
    _round, plain, hinted = ev.history[-1]
    if kind in ("hint_only", "hopeless") and plain <= NEVER_PEAK:
        return ((hinted or 0.0) >= HINTED_WINS) == (kind == "hint_only")
    return False


def price(ev: LevelEvidence, flagged: Iterable[str]) -> float:
    """The share of its designer reward a level keeps: 0 when it shows a finding its designer was flagged
    for, or that finding's first-round profile; else 1."""
    flagged = set(flagged)
    if flagged & set(ev.findings()) or any(_profile(ev, kind) for kind in flagged):
        return 0.0
    return 1.0


def priced(reward: float, share: float) -> float:
    """A reward after pricing: a positive reward scaled by ``share``; a negative one stays (never raised)."""
    return reward * share if reward > 0 else reward
