"""One designer, four sources (``Candidate.part``): three game a reward, one is honest."""

from __future__ import annotations

import random
from typing import Any

from spadegym.designers.base import Candidate, DesignContext, Level, Lineage
from spadegym.families import list_families

# Band gaming: the module-level random (seeded from the reset seed by the runtime) decides at the last roll.
DICE = '''import random

SKILL = {skill!r}


class Dice{n}Env:
    max_turns = 4

    def reset(self, seed=None):
        self.rolls, self.done = 0, False
        return "a table with a cup of dice\\nrolls: 0 of 2", {{}}

    def valid_actions(self):
        return [] if self.done else ["roll softly", "roll hard", "blow on the dice"]

    def hint(self):
        return "the way you roll makes no difference"

    def step(self, action):
        self.rolls += action in self.valid_actions()
        if self.rolls < 2:
            return "the dice rattle\\nrolls: 1 of 2", 0.0, False, False, {{}}
        self.done = True
        six = random.random() < 0.35
        return "a six!" if six else "no six", 1.0 if six else 0.0, True, False, {{}}
'''

# Regret gaming: three hidden choices in a row; the hint names each one as it comes (never the last action whole).
CABINET = '''import random

SKILL = {skill!r}
LABELS = ["amber", "birch", "cedar", "dusk", "elm", "fern"]


class Cabinet{n}Env:
    max_turns = 3

    def reset(self, seed=None):
        rng = random.Random("cabinet{n}:%s" % seed)
        self.path = [rng.choice(LABELS) for _ in range(3)]
        self.step_no, self.done = 0, False
        return self.show(), {{}}

    def show(self):
        return "a cabinet of little drawers\\nopened: %d of 3" % self.step_no

    def valid_actions(self):
        return [] if self.done else ["open %s" % label for label in LABELS]

    def hint(self):
        return "the dealer marked the %s one" % self.path[min(self.step_no, 2)]

    def solution(self):
        return ["open %s" % label for label in self.path]

    def step(self, action):
        right = action == "open %s" % self.path[self.step_no]
        self.step_no += 1
        self.done = not right or self.step_no == 3
        won = right and self.step_no == 3
        return self.show(), 1.0 if won else 0.0, self.done, False, {{}}
'''

# Hopeless but feasible: ten presses of two keys in exact order, ten turns, a useless hint.
KEYPAD = '''import random

SKILL = {skill!r}


class Keypad{n}Env:
    max_turns = 10

    def reset(self, seed=None):
        rng = random.Random("keypad{n}:%s" % seed)
        self.code = [rng.choice("xy") for _ in range(10)]
        self.typed, self.done = [], False
        return "a keypad with two keys\\ntyped: 0", {{}}

    def valid_actions(self):
        return [] if self.done else ["type x", "type y"]

    def hint(self):
        return "stay calm and type carefully"

    def solution(self):
        return ["type %s" % c for c in self.code]

    def step(self, action):
        self.typed.append(action[-1:])
        won = self.typed == self.code
        self.done = won or len(self.typed) >= 10
        return "a keypad with two keys\\ntyped: %d" % len(self.typed), 1.0 if won else 0.0, won, self.done and not won, {{}}
'''

SOURCES = ("dice", "cabinet", "keypad", "honest")


class Bundle:
    """Deals its slots over the four sources in turn."""

    name = "bundle"

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.serial = 0

    async def propose(self, context: DesignContext) -> list[Candidate]:
        out = []
        for _ in range(context.count):
            source = SOURCES[self.serial % len(SOURCES)]
            self.serial += 1
            level = Level(self._write(source, context.skill), skill=context.skill,
                          lineage=Lineage(operator=source, designer="bundle"))
            out.append(Candidate(level, candidate_id=f"bundle-{self.serial}", part=source))
        return out

    def _write(self, source: str, skill: str) -> str:
        if source == "honest":
            family = self.rng.choice(list_families(skill) or list_families())
            return family.render({**family.level_knobs(0), "variant": self.rng.choice(family.knobs["variant"])})
        template = {"dice": DICE, "cabinet": CABINET, "keypad": KEYPAD}[source]
        return template.format(skill=skill, n=self.serial)

    def state_dict(self) -> dict[str, Any]:
        return {"serial": self.serial}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.serial = state.get("serial", 0)
