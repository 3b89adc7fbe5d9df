"""The episode machinery shared by every built-in family, rendered into each file.

``EpisodeCore`` is never instantiated in the host: ``registry.Family.render``
copies its source (and the family's class) into a standalone environment file
whose module constants bind ``DIFFICULTY``. A family class only describes its
game: ``setup`` (draw the hidden instance from ``self.rng``), ``observe``
(labelled observation lines), ``actions`` (the legal actions now), ``apply``
(one legal action -> event text, progress, outcome), ``policy`` (the best next
action, using the hidden state: it makes ``solution()``) and ``advice`` (the hint:
where a family can, the move a player who sees only the observations would make
next and why, never a move read off the hidden state).

The core adds what must be identical everywhere: the turn budget, the reward
rule (1 for a win, 0 for a loss; under ``partial`` shaping, small progress
rewards on the way), invalid-action handling, the observation layout, the
per-state hint, and ``solution()`` computed by replaying ``policy`` on a copy
of the freshly reset instance.
"""

from __future__ import annotations

import copy
import random

#: Bound by every rendered file to the knob values it was rendered with.
DIFFICULTY: dict = {}


class EpisodeCore:
    """Turn budget, reward shaping, observation layout, hint and solution of one family."""

    TITLE = "puzzle"

    def __init__(self):
        self.knobs = dict(DIFFICULTY)
        self.max_turns = int(self.budget())
        self.done = True
        self.turn = 0
        self.event = "call reset() to start"

    # -- the environment contract -------------------------------------------
    def reset(self, seed=None):
        if seed is None:  # the runtime seeds the module-level random before reset
            seed = random.getrandbits(32)
        # A per-instance generator: the same seed and knobs give the same instance.
        self.rng = random.Random(f"{self.TITLE}:{seed}:{self.knobs.get('variant', 0)}")
        self.turn = 0
        self.done = False
        self.event = "start"
        self.setup()
        self._solution = self._plan()
        return self.render(), {"turn": 0}

    def step(self, action):
        if self.done:
            return "the episode is over; call reset()", 0.0, True, False, {"turn": self.turn}
        action = " ".join(self.unbox(str(action)).lower().split())
        self.turn += 1
        progress, outcome = 0.0, None
        if action in self.actions():
            self.event, progress, outcome = self.apply(action)
        else:
            self.event = f"invalid action '{action}'; choose one of the listed actions"
            progress = -0.5
        terminated = outcome is not None
        reward = 1.0 if outcome == "win" else 0.0
        if not terminated and self.knobs.get("reward_shaping") == "partial":
            reward = round(0.1 * max(-1.0, min(1.0, progress)), 3)
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            self.event += "; out of turns"
        self.done = terminated or truncated
        info = {"turn": self.turn, "outcome": outcome or ("timeout" if truncated else "")}
        return self.render(), reward, terminated, truncated, info

    def valid_actions(self):
        return [] if self.done else list(self.actions())

    @staticmethod
    def unbox(action):
        # The SPADE reference delivers actions as \boxed{action}: read the last box's content.
        start = action.rfind("\\boxed{")
        end = action.find("}", start)
        return action[start + 7:end] if 0 <= start < end else action

    def hint(self):
        # The concrete next step in words that contain the action's words (advice() names it).
        return "the episode is over" if self.done else self.advice()

    def solution(self):
        return list(self._solution)

    # -- shared layout ------------------------------------------------------
    def render(self):
        lines = [f"game: {self.TITLE}", *self.observe(), f"event: {self.event}",
                 f"turns left: {self.max_turns - self.turn}"]
        if not self.done:
            lines.append("actions: " + ", ".join(self.actions()))
            lines.append("Reply with one action inside \\boxed{}.")
        return "\n".join(lines)

    def _plan(self):
        # Replaying the policy on a copy (its rng included) gives a winning action list.
        sim = copy.deepcopy(self)
        plan = []
        while not sim.done and len(plan) < sim.max_turns:
            action = sim.policy()
            plan.append(action)
            sim.step(action)
        return plan

    # -- what a family defines ------------------------------------------------
    def budget(self):
        return self.knobs.get("turns", 20)

    def setup(self):
        raise NotImplementedError

    def observe(self):
        return []

    def actions(self):
        raise NotImplementedError

    def apply(self, action):
        raise NotImplementedError

    def policy(self):
        raise NotImplementedError

    def advice(self):
        return f"do {self.policy()} next"
