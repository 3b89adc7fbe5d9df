"""Leave the cave by the one safe tunnel; only the hint tells which (unseen in training)."""

import random

SKILL = "Memory"
WAYS = ["north", "south", "east", "west"]


class BeaconEnv:
    max_turns = 1

    def reset(self, seed=None):
        self.safe = random.choice(WAYS)
        return "Four tunnels lead out of the cave. One is safe.", {}

    def valid_actions(self):
        return list(WAYS)

    def hint(self):
        return f"the safe tunnel is {self.safe}"

    def step(self, action):
        ok = action == self.safe
        return ("Daylight." if ok else "A dead end."), (1.0 if ok else 0.0), True, False, {}
