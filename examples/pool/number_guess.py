"""Guess a hidden number with higher/lower feedback: the smallest complete environment file."""

import random

SKILL = "Logical Deduction"
DESCRIPTION = "Find a hidden number in 1..100 from higher/lower answers."
DIFFICULTY = {"size": 100}


class GuessEnv:
    max_turns = 7  # enough for a binary search of 1..100, too few for luck

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 100)
        return "Guess a number in 1..100. Answer with \\boxed{your guess}.", {}

    def step(self, action):
        guess = int(action) if action.strip().isdigit() else -1
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        return ("higher" if guess < self.secret else "lower"), 0.0, False, False, {}

    def valid_actions(self):
        return [str(i) for i in range(1, 101)]

    def solution(self):
        return [str(self.secret)]

    def hint(self):
        return "Guess the middle of the numbers still possible, then halve the range."
