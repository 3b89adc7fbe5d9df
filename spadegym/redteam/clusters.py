"""Failure clusters: which found failures are the same bug.

A failure of a built-in family level is named by its family and the knob
values of its minimal form, less the knobs a frozen target cannot tell apart
(``UNSEEN_KNOBS``) and the variation dimensions left at their default, so two
failures that shrink to the same game are one cluster. A file written by
a model is named by the normalised hash of its minimal code and the target's
failure pattern (how it lost). The memory counts the failures of each cluster,
so the designer's novelty bonus falls as a cluster fills.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..envfile import normalized_code_hash
from ..families import DIMENSIONS, FamilyError, get_family
from ..rollout import Episode

#: How an episode the target did not win ended.
PATTERNS = ("agent_error", "format", "invalid_actions", "out_of_turns", "lost")


def failure_pattern(episodes: list[Episode]) -> str:
    """The commonest way the target's lost episodes ended (``won`` when it lost none)."""
    kinds = Counter(_how_lost(e) for e in episodes if e.scored and not e.success)
    return kinds.most_common(1)[0][0] if kinds else "won"


def _how_lost(episode: Episode) -> str:
    if episode.failure:
        return "agent_error"
    if episode.format_failures * 2 >= max(1, len(episode.turns)):
        return "format"
    if any("invalid action" in t.observation.lower() for t in episode.turns[1:]) or \
            "invalid action" in episode.final_observation.lower():
        return "invalid_actions"
    return "out_of_turns" if episode.truncated else "lost"


#: Knobs that change neither what a frozen target sees nor when it wins: ``variant`` only picks the
#: instances, ``reward_shaping`` and ``step_cost`` only the rewards before the end (no agent's view
#: holds a reward). Two forms that differ only in them are one game to the target, so one failure.
UNSEEN_KNOBS = ("variant", "reward_shaping", "step_cost")
#: The variation dimensions a target does see (wording, layout, line order, action names, menu, start, turns):
#: a failure that needs one keeps it in its minimal form, and in its cluster's name.
SEEN_DIMENSIONS = tuple(d.name for d in DIMENSIONS if d.name not in UNSEEN_KNOBS)
_DEFAULTS = {d.name: d.default for d in DIMENSIONS}


def level_features(family: str, knobs: dict[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    """Where a family level sits in the search's order: each seen difficulty knob's index on its ladder
    (the extension included), and the seen variation dimensions it sets away from their default."""
    return _features(family, tuple(sorted(knobs.items())))


@functools.lru_cache(maxsize=65536)
def _features(family: str, items: tuple[tuple[str, Any], ...]) -> tuple[dict[str, int], dict[str, Any]]:
    fam = get_family(family)
    knobs = dict(items)
    index = fam.level_index(knobs)
    full = fam.check_knobs(knobs)
    ladders = {k: index[k] for k in fam.ladders if k not in UNSEEN_KNOBS}
    varied = {k: full[k] for k in SEEN_DIMENSIONS if k in full and full[k] != _DEFAULTS[k]}
    return ladders, varied


def level_signature(family: str, knobs: dict[str, Any]) -> dict[str, Any]:
    """The knobs that define a family level's game for a frozen target (completed; ``UNSEEN_KNOBS`` and the
    dimensions at their default left out)."""
    try:
        full = get_family(family).check_knobs(knobs)
    except FamilyError:
        full = dict(knobs)
    return {k: v for k, v in sorted(full.items())
            if k not in UNSEEN_KNOBS and not (k in _DEFAULTS and v == _DEFAULTS[k])}


def cluster_key(family: str | None, knobs: dict[str, Any], source: str, pattern: str) -> str:
    """The cluster of a minimal failure (see the module docstring)."""
    if family:
        signature = level_signature(family, knobs)
        return f"{family}:" + ",".join(f"{k}={v}" for k, v in signature.items())
    return f"code:{normalized_code_hash(source)[:12]}:{pattern}"


def dominates(family: str, knobs: dict[str, Any], minimal: dict[str, Any]) -> bool:
    """Whether a level is at least as hard as another level of its family (a known minimal failure): as far up
    every difficulty knob, and varied the same way on each dimension the other varies. A dimension the other
    leaves at its default may take any choice: the memory assumes a variation never turns a failing game into
    a won one, and a won level in between refutes that for the pair (``ClusterMemory.known_cluster``)."""
    try:
        (mine, my_dims), (theirs, their_dims) = level_features(family, knobs), level_features(family, minimal)
    except FamilyError:
        return False
    return all(mine[k] >= v for k, v in theirs.items()) and all(my_dims.get(k) == v for k, v in their_dims.items())


@dataclass
class ClusterMemory:
    """The failures found so far, by cluster (the designer is pushed away from full ones)."""

    counts: Counter[str] = field(default_factory=Counter)
    minimal: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # key -> (family, knobs)
    written: dict[str, str] = field(default_factory=dict)  # normalised code hash of a written file -> its cluster
    passes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # family levels the target won

    def known_cluster(self, family: str | None, knobs: dict[str, Any], code_hash: str = "") -> str | None:
        """The cluster this level's failure would repeat, so it need not be judged or shrunk again: for a
        family level, a known minimal failure it dominates with no won level in between; for a written
        file, the cluster it (or its minimal form) already joined.

        Dominance assumes a level harder on every knob fails the same way; a won level between the
        two refutes that for this pair (a weakness at the easy end of a knob, say), so the level is
        judged after all. Only a won level strictly above the failure refutes it: one that is the
        failure's own game (won once on the hunt's seeds, failed on its fresh ones) was luck.
        """
        if not family:
            return self.written.get(code_hash) if code_hash else None
        for key, (fam, minimal) in self.minimal.items():
            if fam == family and dominates(family, knobs, minimal) and not self._refuted(family, knobs, minimal):
                return key
        return None

    def _refuted(self, family: str, knobs: dict[str, Any], minimal: dict[str, Any]) -> list[dict[str, Any]]:
        """The won levels strictly above ``minimal`` and at or below ``knobs``."""
        return [won for f, won in self.passes if f == family and dominates(family, knobs, won)
                and _strictly_above(family, won, minimal)]

    def won_between(self, family: str, knobs: dict[str, Any]) -> list[dict[str, Any]]:
        """The won levels that keep this level from repeating a known failure below it (``known_cluster``)."""
        found: list[dict[str, Any]] = []
        for fam, minimal in self.minimal.values():
            if fam == family and dominates(family, knobs, minimal):
                found += [won for won in self._refuted(family, knobs, minimal) if won not in found]
        return found

    def above_failure(self, family: str, knobs: dict[str, Any]) -> bool:
        """Whether this level lies strictly above a known minimal failure (won, it would refute that failure
        for the levels above it)."""
        return any(fam == family and _strictly_above(family, knobs, minimal) for fam, minimal in self.minimal.values())

    def forget_pass(self, family: str, knobs: dict[str, Any]) -> None:
        """A won level that fails its fresh seeds after all: its win was luck, and refutes nothing."""
        self.passes = [(f, won) for f, won in self.passes if not (f == family and won == knobs)]

    def passed_above(self, family: str, knobs: dict[str, Any]) -> bool:
        """Whether the target won a level at least as hard as this one (so it would most likely win this one)."""
        return any(f == family and dominates(family, won, knobs) for f, won in self.passes)

    def add_pass(self, family: str | None, knobs: dict[str, Any]) -> None:
        """A family level the target won: evidence against dominance across it."""
        if family:
            self.passes.append((family, dict(knobs)))

    def novelty(self, key: str) -> float:
        """1 for a new cluster, 1 / (1 + k) for one that already holds k failures."""
        return 1.0 / (1.0 + self.counts[key])

    def add(self, key: str, family: str | None = None, knobs: dict[str, Any] | None = None,
            code_hashes: tuple[str, ...] = ()) -> None:
        self.counts[key] += 1
        if family and key not in self.minimal:
            self.minimal[key] = (family, dict(knobs or {}))
        for code_hash in code_hashes:
            self.written.setdefault(code_hash, key)

    def __len__(self) -> int:
        return len(self.counts)


def _strictly_above(family: str, knobs: dict[str, Any], other: dict[str, Any]) -> bool:
    """At least as hard as ``other`` (``dominates``) and not the same game to the search."""
    return dominates(family, knobs, other) and not dominates(family, other, knobs)
