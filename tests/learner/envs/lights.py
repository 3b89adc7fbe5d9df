"""Press the button of the colour shown, three times in a row; one mistake loses."""

import random

SKILL = "Pattern Matching"
COLOURS = ["red", "green", "blue", "yellow"]


class LightsEnv:
    max_turns = 3

    def reset(self, seed=None):
        self.done = 0
        self.light = random.choice(COLOURS)
        return f"Press the button that matches the light.\nlight: {self.light}", {}

    def valid_actions(self):
        return [f"press {c}" for c in COLOURS]

    def step(self, action):
        if action != f"press {self.light}":
            return "Wrong button.", 0.0, True, False, {}
        self.done += 1
        if self.done == 3:
            return "All three right!", 1.0, True, False, {}
        self.light = random.choice(COLOURS)
        return f"Good. Next one.\nlight: {self.light}", 0.0, False, False, {}
