"""Where a search spends its proposals: Thompson sampling over skills by what their proposals yielded.

Each skill keeps a Beta posterior over "a proposal of this skill finds something": a new
failure confirmed on fresh seeds counts 1, a lesser find a share (``Proposal.found``), anything
else 0. Each slot of a round goes to the skill with the highest posterior draw, so the budget
flows to the skills that keep yielding and away from those whose failures are all found; a
skill the designer has nothing new for gets no more slots.

The yields drift: a search's memory closes each failure it finds, so a skill (a family, a way
to pick) that paid early pays less as its failures run out. Each record therefore first
discounts that arm's earlier counts (``DECAY``; discounted Thompson sampling), so its posterior
follows its last few proposals rather than its whole history.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

#: What a lesser find is worth, against a confirmed new failure's 1 (see ``Proposal.found``).
PARTIAL_YIELD = 0.5
#: The weight an arm's earlier counts keep at each of its records (about its last five proposals count).
DECAY = 0.8


@dataclass
class YieldAllocator:
    skills: list[str]
    seed: int = 0
    decay: float = DECAY
    found: Counter[str] = field(default_factory=Counter)  # in all: what each arm's proposals yielded
    tried: Counter[str] = field(default_factory=Counter)  # in all: each arm's proposals
    recent_found: Counter[str] = field(default_factory=Counter)  # discounted: what the posterior is drawn from
    recent_tried: Counter[str] = field(default_factory=Counter)
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
        draws = {s: self.rng.betavariate(1 + self.recent_found[s], 1 + self.recent_tried[s] - self.recent_found[s])
                 for s in among}
        return sorted(among, key=lambda s: -draws[s])

    def record(self, skill: str, value: float) -> None:
        """One judged proposal of ``skill`` and what it yielded (0 to 1), after its earlier counts are discounted."""
        self.tried[skill] += 1
        self.found[skill] += value
        self.recent_tried[skill] = self.recent_tried[skill] * self.decay + 1
        self.recent_found[skill] = self.recent_found[skill] * self.decay + value

    def exhaust(self, skill: str) -> None:
        self.exhausted.add(skill)

    def state(self) -> dict[str, dict[str, float]]:
        return {s: {"tried": self.tried[s], "found": self.found[s], "recent_tried": self.recent_tried[s],
                    "recent_found": self.recent_found[s]} for s in dict.fromkeys([*self.skills, *self.tried])}

    def load(self, state: dict[str, dict[str, float]]) -> None:
        for s, counts in state.items():
            self.tried[s], self.found[s] = counts["tried"], counts["found"]
            self.recent_tried[s] = counts.get("recent_tried", counts["tried"])
            self.recent_found[s] = counts.get("recent_found", counts["found"])
