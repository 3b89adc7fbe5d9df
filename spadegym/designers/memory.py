"""What the LLM designer remembers about the environments it (and the pool) produced.

Each entry is one past environment: its skill, a code excerpt, the agent's
no-hint win rate, the hint regret and the designer reward it earned. The
prompt shows same-skill *frontier* entries (win rate inside the band, high
regret) as examples to vary, and too-easy / too-hard ones as examples to
avoid. The memory is bounded (oldest first out) and its state is plain JSON.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from ..signals import bands
from .base import LevelSummary

EXCERPT_CHARS = 1200


@dataclass
class MemoryEntry:
    env_id: str
    skill: str
    code_excerpt: str
    win_rate: float | None = None  # no-hint win rate; None until measured
    regret: float | None = None
    score: float | None = None  # designer reward


@dataclass
class MemorySelection:
    """The examples one prompt shows."""

    frontier: list[MemoryEntry]
    too_easy: list[MemoryEntry]
    too_hard: list[MemoryEntry]

    def __bool__(self) -> bool:
        return bool(self.frontier or self.too_easy or self.too_hard)


def code_excerpt(source: str, max_chars: int = EXCERPT_CHARS) -> str:
    """The start of an environment file, cut at a line boundary."""
    text = source.strip()
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars)
    return text[: cut if cut > max_chars // 2 else max_chars].rstrip() + "\n# ..."


class DesignerMemory:
    """A bounded, JSON-persistable record of past environments and their scores."""

    def __init__(self, capacity: int = 200, band: tuple[float, float] = bands.FRONTIER,
                 easy_above: float = bands.MASTERED, hard_below: float = bands.TOO_HARD):
        self.capacity = capacity
        self.band = band
        self.easy_above = easy_above
        self.hard_below = hard_below
        self._entries: OrderedDict[str, MemoryEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[MemoryEntry]:
        return list(self._entries.values())

    def add(self, entry: MemoryEntry) -> None:
        """Insert or refresh an entry (a refreshed one counts as newest); evict the oldest."""
        old = self._entries.pop(entry.env_id, None)
        if old is not None:  # keep measurements the new record lacks
            entry.win_rate = old.win_rate if entry.win_rate is None else entry.win_rate
            entry.regret = old.regret if entry.regret is None else entry.regret
            entry.score = old.score if entry.score is None else entry.score
            entry.code_excerpt = entry.code_excerpt or old.code_excerpt
        self._entries[entry.env_id] = entry
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def observe(self, levels: list[LevelSummary]) -> None:
        """Take in what the loop knows about pool levels (``DesignContext`` lists)."""
        for level in levels:
            excerpt = level.code_excerpt or (code_excerpt(level.source) if level.source else "")
            self.add(MemoryEntry(level.env_id, level.skill, excerpt, level.win_rate,
                                 level.regret, level.score))

    def select(self, skill: str, k_frontier: int = 2, k_avoid: int = 1) -> MemorySelection:
        """Same-skill examples: frontier ones to vary (highest regret first), extremes to avoid."""
        measured = [e for e in self._entries.values() if e.skill == skill and e.win_rate is not None]
        lo, hi = self.band
        frontier = sorted((e for e in measured if lo <= e.win_rate <= hi),
                          key=lambda e: (-(e.regret or 0.0), -(e.score or 0.0)))
        easy = sorted((e for e in measured if e.win_rate > self.easy_above), key=lambda e: -e.win_rate)
        hard = sorted((e for e in measured if e.win_rate < self.hard_below), key=lambda e: e.win_rate)
        return MemorySelection(frontier[:k_frontier], easy[:k_avoid], hard[:k_avoid])

    def skill_stats(self, skill: str) -> dict[str, float]:
        """A short picture of how hard this skill's environments have been."""
        rates = [e.win_rate for e in self._entries.values() if e.skill == skill and e.win_rate is not None]
        if not rates:
            return {}
        return {"count": len(rates), "mean_win_rate": sum(rates) / len(rates),
                "too_easy": sum(r > self.easy_above for r in rates),
                "too_hard": sum(r < self.hard_below for r in rates)}

    def state_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "band": list(self.band), "easy_above": self.easy_above,
                "hard_below": self.hard_below, "entries": [asdict(e) for e in self._entries.values()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.capacity = int(state.get("capacity", self.capacity))
        self.band = tuple(state.get("band", self.band))  # type: ignore[assignment]
        self.easy_above = float(state.get("easy_above", self.easy_above))
        self.hard_below = float(state.get("hard_below", self.hard_below))
        self._entries = OrderedDict()
        for raw in state.get("entries", []):
            self.add(MemoryEntry(**raw))
