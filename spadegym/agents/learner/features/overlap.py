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

import heapq
from collections.abc import Iterable, Iterator

from .actions import Action
from .hashing import Entries, Kind, token_hash
from .observation import HINT_LABEL, Line


def hint_rule_rows(bits: int) -> list[int]:
    """The weight rows of "the hint line writes this action out" (``CONTAINED``) and "names the words
    that set it apart" (``DISTINCT``): what an instruction-following reader of the hint goes by."""
    entries = Entries()
    for kind in (Kind.CONTAINED, Kind.DISTINCT):
        entries.add(kind, token_hash(HINT_LABEL))
    return [int(row) for row in entries.indices(bits)]


#: Observations of up to this many lines are scanned line by line for an action's words; longer ones are
#: visited through a word index, so the work is that of the entries made, not of the observation's length.
SCAN_LINES = 32
#: (line, action) pairs whose overlap entries are remembered before all are forgotten (~500 bytes each).
_MEMO_LIMIT = 100_000


class OverlapMemo:
    """The overlap entries of the (line, action) pairs met lately: a game's lines and menus recur from step
    to step. A cache, never unbounded memory: past ``limit`` pairs it forgets them all."""

    def __init__(self, limit: int = _MEMO_LIMIT) -> None:
        self.limit = limit
        self.known: dict[tuple[int, str, str, frozenset[str]], Entries] = {}

    def clear(self) -> None:
        self.known.clear()


def word_index(lines: list[Line]) -> dict[str, list[int]] | None:
    """Each word -> the positions of the lines holding it, ascending: the lines an action can overlap
    (None for a short observation, whose lines are scanned)."""
    if len(lines) <= SCAN_LINES:
        return None
    index: dict[str, list[int]] = {}
    for pos, line in enumerate(lines):
        for w in line.words:
            index.setdefault(w, []).append(pos)
    return index


def add_overlaps(entries: Entries, lines: list[Line], index: dict[str, list[int]] | None, action: Action,
                 distinct: frozenset[str], room: int, memo: OverlapMemo | None = None) -> None:
    """Add at most ``room`` overlap entries of the action (kind, line label, value); ``distinct``: its words
    the other actions lack.

    Only the lines sharing a word with the action are visited (``index``, from ``word_index``), in order,
    until the room is used; ``memo``: the entries of the pairs met before.
    """
    n = len(action.words)
    if not n or room <= 0:
        return
    limit = len(entries) + room
    words = action.words
    if index is None:
        visited: Iterable[int] = [pos for pos, line in enumerate(lines) if not words.isdisjoint(line.words)]
    else:
        visited = _ascending_once(index.get(w, ()) for w in words)
    known = memo.known if memo is not None else {}
    for pos in visited:
        if len(entries) >= limit:
            break
        line = lines[pos]
        key = (line.label_hash, line.text, action.text, distinct)  # the line's text and label are the line
        made = known.get(key)
        if made is None:
            made = _line_overlaps(line, action, distinct)
            if memo is not None:
                if len(known) >= memo.limit:
                    known.clear()
                known[key] = made
        entries.a += made.a
        entries.b += made.b
        entries.values += made.values
    entries.truncate(limit)


def _line_overlaps(line: Line, action: Action, distinct: frozenset[str]) -> Entries:
    made = Entries()
    n = len(action.words)
    shared = len(action.words & line.words)
    made.add(Kind.OVERLAP, line.label_hash, shared / n)
    made.add(Kind.COVER, line.label_hash, shared / line.count)
    telling = len(distinct & line.words)
    if telling:
        made.add(Kind.DISTINCT, line.label_hash, telling / len(distinct))
    if line.text and action.text in line.text:
        made.add(Kind.CONTAINED, line.label_hash)
        if line.count == n and line.text == action.text:
            made.add(Kind.EQUAL, line.label_hash)
    return made


def _ascending_once(groups: Iterable[list[int]]) -> Iterator[int]:
    """The numbers of several ascending lists, merged in ascending order, each once (lazily)."""
    last = -1
    for x in heapq.merge(*groups):
        if x != last:
            last = x
            yield x
