"""The random agent: a baseline and a degeneracy probe ("does random play win?").

With ``valid_actions`` it picks uniformly among them; without, it draws a short
generic answer (a small integer, yes/no, a direction, a letter). Each episode
has its own generator seeded from the agent seed and the episode key, so the
same plays give the same actions whatever the batching.
"""

from __future__ import annotations

import random

from .base import Reply, View

#: Answers tried on environments that do not list their actions; one family is drawn, then one answer.
SHORT_ANSWERS: dict[str, list[str]] = {
    "number": [str(n) for n in range(0, 11)],
    "yes/no": ["yes", "no"],
    "direction": ["north", "south", "east", "west", "up", "down", "left", "right"],
    "letter": list("abcde"),
}


class RandomAgent:
    """Uniform random play, deterministic per (seed, episode)."""

    keeps_history = False
    needs_valid_actions = False
    lockstep = True

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.name = "random"
        self._rngs: dict[str, random.Random] = {}

    def _rng(self, key: str) -> random.Random:
        if key not in self._rngs:
            self._rngs[key] = random.Random(f"{self.seed}:{key}")  # str seeds are stable across runs
        return self._rngs[key]

    def choose(self, view: View) -> str:
        rng = self._rng(view.episode_key)
        if view.valid_actions:
            return rng.choice(view.valid_actions)
        family = rng.choice(sorted(SHORT_ANSWERS))
        return rng.choice(SHORT_ANSWERS[family])

    async def act(self, views: list[View]) -> list[Reply]:
        replies = []
        for view in views:
            action = self.choose(view)
            replies.append(Reply(text=f"\\boxed{{{action}}}", action=action))
        return replies

    def end_episodes(self, keys: list[str]) -> None:
        for key in keys:
            self._rngs.pop(key, None)

    async def aclose(self) -> None:
        return None
