"""Pick the sum of two numbers among six candidates; the hint names the answer."""

import random

SKILL = "Arithmetic"


class ArithmeticEnv:
    max_turns = 1

    def reset(self, seed=None):
        self.a, self.b = random.randint(10, 49), random.randint(10, 49)
        answer = self.a + self.b
        options = {answer}
        while len(options) < 6:
            options.add(answer + random.choice([-1, 1]) * random.randint(1, 9))
        self.options = sorted(options)
        return f"What is {self.a} + {self.b}?\noptions: {' '.join(map(str, self.options))}", {}

    def valid_actions(self):
        return [str(x) for x in self.options]

    def hint(self):
        return f"the answer is {self.a + self.b}"

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), (1.0 if ok else 0.0), True, False, {}
