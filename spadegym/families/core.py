"""The episode machinery shared by every built-in family, rendered into each file.

``EpisodeCore`` is never instantiated in the host: ``registry.Family.render``
copies its source (and the family's class) into a standalone environment file
whose module constants bind ``DIFFICULTY`` (the knob values, variation
dimensions included), ``WORDING`` (the level's words for the family's phrases
and action words) and ``REPLY``. A family class only describes its game:
``setup`` (draw the hidden instance from ``self.rng``), ``observe`` (labelled
observation lines), ``actions`` (the legal actions now), ``apply`` (one legal
action -> event text, progress, outcome), ``policy`` (the best next action,
using the hidden state: it makes ``solution()``) and ``advice`` (the hint:
where a family can, the move a player who sees only the observations would
make next and why, never a move read off the hidden state). All of them speak
the family's listed words; the core rewords what the player sees.

The core adds what must be identical everywhere: the turn budget, the reward
rule (1 for a win, 0 for a loss; under ``partial`` shaping, small progress
rewards on the way; a ``step_cost`` on steps that do not end the episode),
invalid-action handling, the observation's wording, layout and line order,
the menu's names and order (the listed names stay aliases), the start (random
legal moves before the first observation, redrawn until the solution still
wins), the per-state hint, and ``solution()`` computed by replaying ``policy``
on a copy of the freshly reset instance (when first asked for, unless a shifted
start needs it at reset; the replay skips rendering).
"""

from __future__ import annotations

import copy
import random
import re

#: Bound by every rendered file to the knob values it was rendered with.
DIFFICULTY: dict = {}
#: Bound by every rendered file: listed word or phrase -> the level's word for it (empty: as listed).
WORDING: dict = {}
#: Bound by every rendered file: the last observation line, which asks for the action.
REPLY = "Reply with one action inside \\boxed{}."


class EpisodeCore:
    """Turn budget, reward shaping, observation layout, wording, hint and solution of one family."""

    TITLE = "puzzle"

    def __init__(self):
        self.knobs = dict(DIFFICULTY)
        self.max_turns = int(self.budget()) + int(self.knobs.get("extra_turns", 0))
        self.done = True
        self.turn = 0
        self.outcome = None
        self.event = "call reset() to start"
        self._menu_names = None
        keys = sorted(WORDING, key=len, reverse=True)
        self._words = re.compile(r"\b(" + "|".join(map(re.escape, keys)) + r")\b") if keys else None

    # -- the environment contract -------------------------------------------
    def reset(self, seed=None):
        if seed is None:  # the runtime seeds the module-level random before reset
            seed = random.getrandbits(32)
        self._begin(seed)
        return self.render(), {"turn": 0}

    def _begin(self, seed):
        self._seed = seed
        # A per-instance generator: the same seed and knobs give the same instance.
        self.rng = random.Random(f"{self.TITLE}:{seed}:{self.knobs.get('variant', 0)}")
        moves = int(self.knobs.get("start", 0))
        # A shifted start is redrawn until the solution still wins from it, in two moves or more and not
        # starting with its winning move (the first hint names the first move): five tries with ``moves``
        # moves, then five with one move fewer, ..., then a plain start.
        for shift in [m for m in range(moves, 0, -1) for _ in range(5)] + [0]:
            self.turn, self.done, self.outcome, self.event = 0, False, None, "start"
            self.setup()
            self._menu_names = None
            if not shift:
                # Nothing to check: the plan waits for solution(), which most episodes never call.
                self._solution = None
                break
            self.shift(shift)
            self._menu_names = None
            self._solution, won = self._plan()
            if won and len(self._solution) >= 2 and self._solution[0] != self._solution[-1]:
                break

    def step(self, action):
        if self.done:
            return "the episode is over; call reset()", 0.0, True, False, {"turn": self.turn}
        moved = self._move(action)
        return (self.render(), *moved)

    def _move(self, action):
        # A step without the observation (the plan's simulation needs only the state): reward, ends, info.
        action = " ".join(self.unbox(str(action)).lower().split())
        self.turn += 1
        progress, outcome = 0.0, None
        listed = self._menu().get(action, action)  # the listed name of a shown action (listed names are aliases)
        if listed in self.actions():
            self.event, progress, outcome = self.apply(listed)
            self._menu_names = None
        else:
            self.event = f"invalid action '{action}'; choose one of the listed actions"
            progress = -0.5
        terminated = outcome is not None
        reward = 1.0 if outcome == "win" else 0.0
        if not terminated:
            if self.knobs.get("reward_shaping") == "partial":
                reward = 0.1 * max(-1.0, min(1.0, progress))
            reward = round(reward - float(self.knobs.get("step_cost", 0.0)), 3)
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            self.event += "; out of turns"
        self.done = terminated or truncated
        self.outcome = outcome
        info = {"turn": self.turn, "outcome": outcome or ("timeout" if truncated else "")}
        return reward, terminated, truncated, info

    def valid_actions(self):
        return [] if self.done else list(self._menu())

    @staticmethod
    def unbox(action):
        # The SPADE reference delivers actions as \boxed{action}: read the last box's content.
        start = action.rfind("\\boxed{")
        end = action.find("}", start)
        return action[start + 7:end] if 0 <= start < end else action

    def hint(self):
        # The concrete next step in words that contain the action's words (advice() names it).
        return "the episode is over" if self.done else self._reword(self.advice())

    def solution(self):
        if self._solution is None:
            # Planned when first asked, on a fresh instance reset with the same seed: the same instance as
            # this one's start, whatever this one has played since.
            fresh = type(self)()
            fresh._begin(self._seed)
            self._solution = fresh._plan(fresh)[0]
        return list(self._solution)

    # -- what the player sees -----------------------------------------------
    def render(self):
        head, body = [f"game: {self.TITLE}"], list(self.observe())
        tail = [f"event: {self.event}", f"turns left: {self.max_turns - self.turn}"]
        order = self.knobs.get("line_order", "standard")
        lines = tail + head + body if order == "event_first" else head + body + tail
        if order == "reversed":
            lines.reverse()
        lines = [self._reword(line) for line in lines]
        if not self.done:
            lines.append(self._reword("actions") + ": " + ", ".join(self.valid_actions()))
        lines = [self._layout(line) for line in lines]
        if not self.done:
            lines.append(REPLY)
        return "\n".join(lines)

    def _reword(self, text):
        # Whole words and phrases only, longest first, so "turns left" is one phrase and "key" not "keyboard".
        return self._words.sub(lambda m: WORDING[m.group(1)], text) if self._words else text

    def _layout(self, line):
        label, sep, value = line.partition(": ")
        layout = self.knobs.get("layout", "colon")
        if not sep or layout == "colon" or len(label) > 40:
            return line
        return {"equals": f"{label} = {value}", "pipe": f"{label} | {value}"}.get(layout, f"[{label}] {value}")

    def _menu(self):
        # Shown name -> listed name, in the level's menu order (shuffled: per instance and turn). The names are
        # kept until the state moves (apply, setup, shift): an observation, valid_actions() and the next step's
        # action read the same ones.
        if self._menu_names is None:
            self._menu_names = {self._reword(a): a for a in self.actions()}
        shown = self._menu_names
        names = list(shown)
        order = self.knobs.get("menu", "listed")
        if order == "reversed":
            names.reverse()
        elif order == "sorted":
            names.sort()
        elif order == "shuffled":
            random.Random(f"menu:{self._seed}:{self.turn}").shuffle(names)
        return {name: shown[name] for name in names}

    def shift(self, moves):
        # Shifted initial conditions: ``moves`` random legal moves that do not end the episode (tried in a
        # random order, each on a copy first).
        for _ in range(moves):
            options = list(self.actions())
            self.rng.shuffle(options)
            for action in options:
                if self._copy().apply(action)[2] is None:
                    self.apply(action)
                    break

    def _copy(self):
        # A deep copy whose generator is copied through its state (deepcopy walks its 625 numbers one by one).
        rng = random.Random()
        rng.setstate(self.rng.getstate())
        return copy.deepcopy(self, {id(self.rng): rng})

    def _plan(self, sim=None):
        # Replaying the policy on a copy (its rng included; ``sim``: an instance to play out instead) gives a
        # winning action list.
        sim = self._copy() if sim is None else sim
        plan = []
        while not sim.done and len(plan) < sim.max_turns:
            action = sim._reword(sim.policy())
            plan.append(action)
            sim._move(action)
        return plan, sim.outcome == "win"

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

    # ``shift(moves)`` (above) may be redefined: another way to draw shifted initial conditions.
