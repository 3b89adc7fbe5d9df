"""Where a search spends its proposals: Thompson sampling over skills by what their proposals yielded.

Each skill keeps a Beta posterior over "a proposal of this skill finds something": a new
minimal failure counts 1, a level the target lost only sometimes counts one half (a failure
rate that rises with difficulty is a gradient the designer can climb), anything else 0. Each
slot of a round goes to the skill with the highest posterior draw, so the budget flows to the
skills that keep yielding and away from those whose failures are all found; a skill the
designer has nothing new for gets no more slots.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

#: What a proposal that lost some plays but did not fail is worth, against a new failure's 1.
PARTIAL_YIELD = 0.5


@dataclass
class YieldAllocator:
    skills: list[str]
    seed: int = 0
    found: Counter[str] = field(default_factory=Counter)
    tried: Counter[str] = field(default_factory=Counter)
    exhausted: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def slots(self, count: int) -> list[int]:
        """``count`` slots over the skills (in order), one posterior draw per slot."""
        live = [s for s in self.skills if s not in self.exhausted]
        picked: Counter[str] = Counter()
        for _ in range(count if live else 0):
            picked[self.pick(live)] += 1
        return [picked[s] for s in self.skills]

    def pick(self, among: list[str]) -> str:
        """The one of ``among`` with the highest posterior draw."""
        return self.ranked(among)[0]

    def ranked(self, among: list[str]) -> list[str]:
        """``among`` by one posterior draw each, highest first."""
        draws = {s: self.rng.betavariate(1 + self.found[s], 1 + self.tried[s] - self.found[s]) for s in among}
        return sorted(among, key=lambda s: -draws[s])

    def record(self, skill: str, value: float) -> None:
        """One judged proposal of ``skill`` and what it yielded (0, ``PARTIAL_YIELD`` or 1)."""
        self.tried[skill] += 1
        self.found[skill] += value

    def exhaust(self, skill: str) -> None:
        self.exhausted.add(skill)

    def state(self) -> dict[str, dict[str, float]]:
        return {s: {"tried": self.tried[s], "found": self.found[s]} for s in dict.fromkeys([*self.skills, *self.tried])}

    def load(self, state: dict[str, dict[str, float]]) -> None:
        for s, counts in state.items():
            self.tried[s], self.found[s] = counts["tried"], counts["found"]
