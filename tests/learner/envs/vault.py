"""Open the vault with the right code word; only the hint tells which (unseen in training)."""

import random

SKILL = "Memory"
WORDS = ["amber", "birch", "cobalt", "dune", "ember", "fjord"]


class VaultEnv:
    max_turns = 1

    def reset(self, seed=None):
        self.secret = random.choice(WORDS)
        return "A vault asks for a code word.", {}

    def valid_actions(self):
        return [f"say {w}" for w in WORDS]

    def hint(self):
        return f"the code word is {self.secret}"

    def step(self, action):
        ok = action == f"say {self.secret}"
        return ("The vault opens." if ok else "Silence."), (1.0 if ok else 0.0), True, False, {}
