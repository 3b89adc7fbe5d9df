"""A tiny, valid environment assembled from replaceable snippets.

Each test replaces one snippet with a broken variant, so the expected failure
is the only thing that changes. The game: a vault opens with one of eight code
words; 'listen' gives a clue, a wrong word sets off the alarm.
"""

from __future__ import annotations

WORDS = ["amber", "birch", "cedar", "delta", "ember", "flint", "grove", "haven"]

SNIPPETS: dict[str, str] = {
    "header": "import random",
    "constants": f"WORDS = {WORDS!r}",
    "class_line": "class VaultEnv:",
    "attributes": "    max_turns = 6",
    "init": "",
    "reset": '''
    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.secret = self.rng.choice(WORDS)
        self.turn = 0
        return "A vault opens with one code word. Answer a word, or 'listen' for a clue, in \\\\boxed{}.", {}
''',
    "step": '''
    def step(self, action):
        self.turn += 1
        word = action.strip().lower()
        if word == "listen":
            return f"A clue: the middle letter is '{self.secret[2]}'.", 0.0, False, False, {}
        if word == self.secret:
            return "The vault opens!", 1.0, True, False, {}
        if word in WORDS:
            return "Wrong code: the alarm sounds.", -1.0, True, False, {}
        return "Answer one of the code words or 'listen'.", 0.0, False, False, {}
''',
    "valid_actions": '''
    def valid_actions(self):
        return WORDS + ["listen"]
''',
    "hint": '''
    def hint(self):
        return f"The code word starts with '{self.secret[0]}'."
''',
    "solution": '''
    def solution(self):
        return [self.secret]
''',
    "extra": "",
}


def make_env(**replace: str) -> str:
    """The source of the tiny environment, with some snippets replaced."""
    unknown = set(replace) - set(SNIPPETS)
    if unknown:
        raise KeyError(f"unknown snippets: {sorted(unknown)}")
    parts = {**SNIPPETS, **replace}
    return "\n".join(parts[name] for name in SNIPPETS) + "\n"
