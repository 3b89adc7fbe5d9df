"""Words renamed at random: copies of decisions the learner also trains on.

A game the learner has never seen names its actions and labels with words it
has no weights for. Training on copies of its decisions in which some words
are renamed to fresh nonsense (the same word the same way throughout a
group of plays, so the hint, the menu and the lines still agree with each other)
teaches it to choose from what survives a renaming: numbers, the words that
were kept, and how an action's words meet the observation's lines (overlaps,
references), rather than from a game's exact words alone.
"""

from __future__ import annotations

import re

import numpy as np

from .observation import HINT_LABEL

_WORD = re.compile(r"[A-Za-z]+")
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))
_NAME_LETTERS = 7  # 26**7 names: two renamed words of an update almost never meet
KEPT = frozenset({HINT_LABEL})  # the contract's hint label: what the hint rule reads, never renamed


class Disguise:
    """One group's renaming: each word, the first time it is met, is renamed with probability ``share``."""

    def __init__(self, rng: np.random.Generator, share: float):
        self.rng, self.share = rng, share
        self.names: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        return _WORD.sub(self._rename, text)

    def _rename(self, match: re.Match[str]) -> str:
        word = match.group(0).lower()
        name = self.names.get(word)
        if name is None:
            keep = word in KEPT or self.rng.random() >= self.share
            name = self.names[word] = word if keep else "".join(self.rng.choice(_LETTERS, _NAME_LETTERS))
        return name
