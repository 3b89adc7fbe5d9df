"""Action features: each word of the action and its whole text, whatever the observation."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .hashing import BoundedMemo, Entries, Kind, TokenHashes
from .observation import TOKEN, WORD

_ACTION_TOKENS = 32  # tokens of an action that are read
_MEMO_LIMIT = 50_000  # the action memo is cleared past this many actions


@dataclass
class Action:
    tokens: np.ndarray  # uint64 hashes of the words and of the whole text, crossed with the observation
    words: frozenset[str]
    text: str  # " w1 w2 ... "
    idx: np.ndarray
    val: np.ndarray
    verb: str  # its first word: actions sharing it are siblings ("run job 1", "run job 4")
    lead: np.ndarray = field(init=False)  # idx with the whole-text entry first: what a cut keeps

    def __post_init__(self) -> None:
        self.lead = np.concatenate((self.idx[-1:], self.idx[:-1]))

    def own_entries(self, share: int) -> tuple[np.ndarray, np.ndarray]:
        """Its own (index, value) entries, at most ``share``: its whole text first when they must be cut."""
        if len(self.idx) <= share:
            return self.idx, self.val
        return self.lead[:share], _uniform(share)


@functools.lru_cache(maxsize=64)
def _uniform(n: int) -> np.ndarray:
    """``n`` equal values summing to 1 (shared: never written to)."""
    values = np.full(n, 1.0 / n, dtype=np.float32)
    values.flags.writeable = False
    return values


class Actions(BoundedMemo):
    """The features of an action, remembered: the same few actions come back turn after turn."""

    def __init__(self, hashes: TokenHashes, bits: int):
        super().__init__(_MEMO_LIMIT)
        self.hashes, self.bits = hashes, bits

    def compute(self, action: str) -> Action:
        tokens = TOKEN.findall(action.lower())[:_ACTION_TOKENS]
        words = [t for t in tokens if WORD.fullmatch(t)]
        whole = self.hashes(" ".join(tokens))
        entries = Entries()
        for t in tokens:
            entries.add(Kind.ACT_TOKEN, self.hashes(t))
        entries.add(Kind.ACT_TEXT, whole)
        idx = entries.indices(self.bits)
        val = np.full(len(idx), 1.0 / len(idx), dtype=np.float32)  # the group sums to 1: see ``featurizer``
        return Action(np.unique(np.asarray(entries.b, dtype=np.uint64)), frozenset(words),
                      " " + " ".join(words) + " ", idx, val, words[0] if words else "")
