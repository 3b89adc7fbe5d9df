"""How different the levels of a pool are: the Vendi score over an n-gram kernel.

The Vendi score of n items is exp(entropy of the eigenvalues of K / n), where K
is their similarity matrix (K_ii = 1): n for n unrelated items, 1 for n copies
of one. Divided by n it is the share of the pool that is effectively distinct
(the SPADE paper: 0.68 with corpus grounding, 0.04 without). The kernel is the
cosine of TF-IDF weighted word 1- to 3-gram counts, so it needs no model and
no download; the IDF weight lets what sets a level apart within the pool count
more than what every level shares (the built-in families share their episode
machinery, which would otherwise make 18 different games look like 4):

    per_item([ngrams(a), ngrams(a)])     # 0.5: two copies are one level
    per_item([ngrams(t) for t in sources])

Code is compared on its text; a level's play on a transcript (observations and
actions), which tells apart levels whose code differs only in a knob that
changes nothing the agent sees. A level's identity is both: the headline
figure (``pool``, ``new``, and the collapse flag) uses the elementwise product
of the code and transcript kernels (``identity``), so two levels count as one
only when they share their code *and* play alike: a knob vector that renders
near-identical code but plays differently (another wording, layout or size)
is another level, and so is different code that plays the same game only if
its transcripts differ.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

#: Word n-grams of these sizes make up a text's features; 1-grams alone miss structure.
NGRAM_SIZES = (1, 2, 3)
#: A pool of at least ``COLLAPSE_MIN_SIZE`` levels whose code Vendi score per level is below
#: ``COLLAPSE_THRESHOLD`` has collapsed onto a few games (the paper's collapsed pool: 0.04).
COLLAPSE_THRESHOLD = 0.1
COLLAPSE_MIN_SIZE = 8

_TOKENS = re.compile(r"[A-Za-z_]+|\d+|[^\sA-Za-z_\d]")


class Grams(Counter):
    """N-gram counts (an n-gram, a tuple of tokens -> count), not changed once built (``ngrams``, the watch's
    fingerprints): ``similarity`` keeps the arrays it reads from them (``terms``) with them, so a pool's kernel
    costs array work per round, not a pass over every n-gram of every level."""

    _terms: tuple[np.ndarray, np.ndarray] | None = None


def ngrams(text: str) -> Grams:
    """The counts of the text's word 1- to 3-grams (numbers and symbols are tokens too)."""
    tokens = _TOKENS.findall(text.lower())
    counts = Grams()
    for n in NGRAM_SIZES:
        counts.update(zip(*(tokens[i:] for i in range(n))))
    return counts


def terms(counts: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """The counts as arrays: each n-gram's hash (a key that sets it apart from the others of a kernel) and its
    log-damped count, in the counts' order; kept with a ``Grams``."""
    cached = getattr(counts, "_terms", None)
    if cached is not None:
        return cached
    found = (np.fromiter(map(hash, counts), np.int64, len(counts)),
             np.log1p(np.fromiter(counts.values(), np.float64, len(counts))))
    if isinstance(counts, Grams):
        counts._terms = found
    return found


def similarity(items: Sequence[Mapping]) -> np.ndarray:
    """The TF-IDF cosine similarity of the items (log-damped counts, smoothed IDF), unit diagonal."""
    if not items:
        return np.zeros((0, 0))
    found = [terms(counts) for counts in items]
    vocab, first, column = np.unique(np.concatenate([k for k, _ in found]), return_index=True, return_inverse=True)
    # Columns in order of first appearance (the items' order, then each item's own), as a vocabulary built by
    # reading the items would number them: the kernel does not depend on how the keys sort.
    rank = np.empty(len(vocab), np.int64)
    rank[np.argsort(first)] = np.arange(len(vocab))
    x = np.zeros((len(items), len(vocab)))
    rows = np.repeat(np.arange(len(items)), [len(k) for k, _ in found])
    x[rows, rank[column]] = np.concatenate([w for _, w in found])
    x *= np.log((1 + len(items)) / (1 + (x > 0).sum(axis=0))) + 1.0
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    k = x @ x.T
    np.fill_diagonal(k, 1.0)  # an empty text is still itself, and like no other
    return k


def vendi(k: np.ndarray) -> float:
    """The Vendi score of a similarity matrix with unit diagonal: the effective number of distinct items."""
    n = k.shape[0]
    if n == 0:
        return 0.0
    eig = np.clip(np.linalg.eigvalsh(k / n), 0.0, None)
    eig = eig[eig > 1e-12]
    return float(np.exp(-np.sum(eig * np.log(eig))))


def per_item(items: Sequence[Grams]) -> float | None:
    """Vendi score divided by the number of items (None for none): 1 when all differ, 1/n for copies."""
    return round(vendi(similarity(items)) / len(items), 4) if items else None


def identity_kernel(code: Sequence[Grams], play: Sequence[Grams | None]) -> np.ndarray:
    """The product of the code and transcript kernels (a level's identity is its code and its behaviour); a
    level with no transcript (None) is compared by its code alone."""
    played = [i for i, grams in enumerate(play) if grams is not None]
    k = similarity(code)
    k[np.ix_(played, played)] *= similarity([play[i] for i in played])
    return k


def identity(code: Sequence[Grams], play: Sequence[Grams]) -> float | None:
    """Vendi score per item over the identity kernel (``identity_kernel``); None for none."""
    if not code:
        return None
    return round(vendi(identity_kernel(code, play)) / len(code), 4)


def collapsed(per_item: float | None, size: int) -> bool:
    """Whether a pool of ``size`` levels with this diversity per level has collapsed."""
    return per_item is not None and size >= COLLAPSE_MIN_SIZE and per_item < COLLAPSE_THRESHOLD


def transcript_text(observations: Sequence[str], actions: Sequence[str | None]) -> str:
    """One play as text: each observation followed by the action taken on it."""
    return "\n".join(f"{obs}\n> {act or ''}" for obs, act in zip(observations, actions))


class PoolDiversity:
    """The n-grams of each pool level's code and of one transcript of it.

    A level's transcript is its first no-hint play (the round it was added); a
    level it has not seen played (the pool of a resumed run) gets it from
    ``first_play``, so the figures of a resumed run equal those of an
    uninterrupted one. Each summary keeps the n-grams of the levels it names and
    forgets the rest: the pool is whatever the caller names.
    """

    def __init__(self, first_play: Callable[[str], str | None] | None = None) -> None:
        self.first_play = first_play or (lambda env_id: None)
        self.code: dict[str, Grams] = {}
        self.play: dict[str, Grams] = {}

    def add_play(self, env_id: str, transcript: str) -> None:
        self.play.setdefault(env_id, ngrams(transcript))

    def kernel(self, sources: Mapping[str, str]) -> np.ndarray:
        """The identity similarity (code kernel x play kernel) of the named levels (env id -> source code), in
        their order; a level with no play yet is compared by its code alone."""
        for env_id, source in sources.items():  # kept for the next summary, which forgets what it does not name
            if env_id not in self.code:
                self.code[env_id] = ngrams(source)
        return identity_kernel([self.code[i] for i in sources], [self._play_of(i) for i in sources])

    def _play_of(self, env_id: str) -> Grams | None:
        if env_id not in self.play:
            transcript = self.first_play(env_id)
            if transcript is None:
                return None
            self.play[env_id] = ngrams(transcript)
        return self.play[env_id]

    def summary(self, new: Mapping[str, str], pool: Mapping[str, str]) -> dict[str, float | bool | None]:
        """Vendi score per level of the round's new levels and of the pool (each: env id -> source code): by identity
        (code and transcript, the levels that have both), by code, by transcript."""
        named = {**new, **pool}
        self.code = {i: self.code[i] if i in self.code else ngrams(source) for i, source in named.items()}
        for env_id in named:
            self._play_of(env_id)
        self.play = {i: g for i, g in self.play.items() if i in named}
        kernels: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

        def kernel(kind: str, ids: list[str]) -> np.ndarray:
            """The code or play kernel of these levels, computed once per summary: the identity figure and the
            code and play figures of one set of levels read the same two kernels."""
            key = (kind, tuple(ids))
            if key not in kernels:
                grams = self.code if kind == "code" else self.play
                kernels[key] = similarity([grams[i] for i in ids])
            return kernels[key]

        def score(grams: dict[str, Grams], ids: Iterable[str]) -> float | None:
            present = [i for i in ids if i in grams]
            if not present:
                return None
            return round(vendi(kernel("code" if grams is self.code else "play", present)) / len(present), 4)

        def both(ids: Iterable[str]) -> float | None:
            kept = [i for i in ids if i in self.code and i in self.play]
            if not kept:
                return None
            k = kernel("code", kept) * kernel("play", kept)  # ``identity_kernel`` of levels that all have a play
            return round(vendi(k) / len(kept), 4)

        pool_identity = both(pool)
        return {
            "new": both(new), "pool": pool_identity,
            "new_code": score(self.code, new), "new_play": score(self.play, new),
            "pool_code": score(self.code, pool), "pool_play": score(self.play, pool),
            "collapsed": collapsed(pool_identity, len(pool)),
        }
