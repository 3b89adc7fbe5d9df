"""Overlap features: how much of an action appears in each line of the observation.

Per line label (never per word, so what they learn transfers to environments
never seen in training; this is how the learner learns to follow the
``hint: <text>`` line):

- ``OVERLAP``: the share of the action's words found in the line;
- ``COVER``: the share of the line's words the action covers;
- ``DISTINCT``: the share of the words that set this action apart from the
  others found in the line (``amber`` of ``say amber`` when every action starts
  with ``say``), which lets the learner follow ``the code word is amber``
  (``benchmarks/learner.py`` measures the transfer it brings);
- ``CONTAINED``: the action's words appear contiguously in the line;
- ``EQUAL``: the action is the whole line.
"""

from __future__ import annotations

from .actions import Action
from .hashing import Entries, Kind
from .observation import Line


def add_overlaps(entries: Entries, lines: list[Line], action: Action, distinct: frozenset[str]) -> None:
    """Add the action's overlap entries (kind, line label, value); ``distinct``: its words the other actions lack."""
    n = len(action.words)
    if not n:
        return
    for line in lines:
        shared = len(action.words & line.words)
        if not shared:
            continue
        entries.add(Kind.OVERLAP, line.label_hash, shared / n)
        entries.add(Kind.COVER, line.label_hash, shared / line.count)
        telling = len(distinct & line.words)
        if telling:
            entries.add(Kind.DISTINCT, line.label_hash, telling / len(distinct))
        if line.text and action.text in line.text:
            entries.add(Kind.CONTAINED, line.label_hash)
            if line.count == n and line.text == action.text:
                entries.add(Kind.EQUAL, line.label_hash)
