"""Small environment sources shared by the rollout tests."""

# The secret is in the first observation, so equal first observations mean the same instance.
VAULT = '''
import random

class VaultEnv:
    hint = "the code is printed on the door"

    def reset(self, seed=None):
        self.code = str(random.randint(100, 999))
        return f"A vault. The door reads {self.code}. Type the code.", {}

    def step(self, action):
        if action.strip() == self.code:
            return "Open!", 1.0, True, False, {}
        return "Wrong code.", 0.0, False, False, {}

    def valid_actions(self):
        return [self.code, "000"]
'''

ENDLESS = '''
class EndlessEnv:
    def reset(self, seed=None):
        return "Nothing ever happens.", {}
    def step(self, action):
        return "Still nothing.", 0.0, False, False, {}
'''

DECLARED = ENDLESS.replace("class EndlessEnv:", "class ShortEnv:\n    max_turns = 3")

RAISES = '''
class BrokenEnv:
    def reset(self, seed=None):
        return "Press anything.", {}
    def step(self, action):
        raise RuntimeError("the environment has a bug")
'''

HANGS = '''
import time

class HangEnv:
    def reset(self, seed=None):
        return "Press anything.", {}
    def step(self, action):
        while True:
            time.sleep(0.05)
'''

# The hint is a method: re-evaluated per step for agents that see only the current observation.
COUNTER = '''
class CounterEnv:
    max_turns = 3
    def reset(self, seed=None):
        self.n = 0
        return "Count with me.", {}
    def step(self, action):
        self.n += 1
        return f"Count is {self.n}.", 0.0, False, False, {}
    def hint(self):
        return f"say   {self.n + 1}"
'''
