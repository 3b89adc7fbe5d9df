"""Stable feature indices: a fixed string hash, an integer mixer, and the entries hashed with them.

Indices come from crc32 and integer mixing, never Python's salted ``hash``, so
a feature has the same index in every process.
"""

from __future__ import annotations

import zlib
from enum import IntEnum

import numpy as np

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)
_M1_INT, _M2_INT, _M3_INT = int(_M1), int(_M2), int(_M3)
_MASK64 = (1 << 64) - 1
_KIND_SALT = 0x632BE59BD9B4E019  # spreads the kind over the 64 bits before mixing
_KIND_STRIDE = 1_000_003  # a prime that keeps (key, kind) pairs apart when folded into one integer
_MEMO_LIMIT = 200_000  # the token memo is cleared past this many strings: a cache, not a vocabulary


class Kind(IntEnum):
    """Feature families: the salt that keeps them apart in the one hash space (the values are part of
    the index, so they never change)."""

    UNSALTED = 0  # the kind is already in the entry's key (see ``keyed``)
    OBS_WORD = 1
    OBS_BIGRAM = 2
    OBS_TAGGED = 3  # a word tagged with its line's label
    OBS_LABEL = 4
    OBS_BIAS = 5
    OBS_RELATION = 6  # two labelled lines' numbers compared slot by slot
    ACT_TOKEN = 11
    ACT_TEXT = 12
    CROSS = 13  # tagged observation word x action token
    OVERLAP = 21
    COVER = 22
    CONTAINED = 23
    EQUAL = 24
    DISTINCT = 25
    REFERS = 31
    REF_WORD = 32
    REF_MIN = 33
    REF_MAX = 34
    MENTIONS = 35


def token_hash(text: str) -> int:
    """A stable 32-bit hash of a string (the same in every process)."""
    return zlib.crc32(text.encode("utf-8", "replace"))


def mix(kind: int, a: np.ndarray | int, b: np.ndarray | int, bits: int) -> np.ndarray:
    """Index in ``[0, 2**bits)`` of the feature (kind, a, b); vectorised over a and b."""
    a64 = np.asarray(a, dtype=np.uint64)
    b64 = np.asarray(b, dtype=np.uint64)
    x = (a64 * _M1) ^ (b64 * _M2) ^ np.uint64(kind * _KIND_SALT & 0xFFFFFFFFFFFFFFFF)
    x ^= x >> np.uint64(31)
    x *= _M3
    x ^= x >> np.uint64(29)
    return (x >> np.uint64(64 - bits)).astype(np.int64)


def mix_int(kind: int, a: int, b: int, bits: int) -> int:
    """``mix`` of one (a, b) in Python integers: the same index, without numpy's cost on a few entries."""
    x = ((a * _M1_INT) ^ (b * _M2_INT) ^ (kind * _KIND_SALT)) & _MASK64
    x ^= x >> 31
    x = (x * _M3_INT) & _MASK64
    x ^= x >> 29
    return x >> (64 - bits)


def keyed(kind: Kind, key: int) -> int:
    """One integer for (kind, key): how observation features carry their kind into ``Entries``."""
    return key * _KIND_STRIDE + kind


class BoundedMemo:
    """A memo of ``compute`` that forgets everything past ``limit`` keys: a cache, never unbounded memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._known: dict = {}

    def compute(self, key: str):
        raise NotImplementedError

    def __call__(self, key: str):
        value = self._known.get(key)
        if value is None:
            if len(self._known) > self.limit:
                self._known.clear()
            value = self._known[key] = self.compute(key)
        return value

    def clear(self) -> None:
        self._known.clear()


class TokenHashes(BoundedMemo):
    """A bounded memo of ``token_hash``: a view hashes the same few hundred words again and again."""

    def __init__(self) -> None:
        super().__init__(_MEMO_LIMIT)

    def compute(self, key: str) -> int:
        return token_hash(key)


class Entries:
    """Feature entries ``(a, b, value)`` gathered in Python and hashed in one vectorised call.

    The index of an entry is ``mix(0, a, b)``: ``a`` is a ``Kind`` (or a ``keyed``
    kind and key), ``b`` what the feature is about (a word's or a label's hash).
    Hashing once per view rather than once per entry is what keeps building a
    view cheap.
    """

    def __init__(self) -> None:
        self.a: list[int] = []
        self.b: list[int] = []
        self.values: list[float] = []

    def __len__(self) -> int:
        return len(self.a)

    def add(self, a: int, b: int, value: float = 1.0) -> None:
        self.a.append(a)
        self.b.append(b)
        self.values.append(value)

    def extend(self, other: Entries, limit: int | None = None) -> None:
        """Add ``other``'s entries, or only its first ``limit``."""
        self.a += other.a[:limit]
        self.b += other.b[:limit]
        self.values += other.values[:limit]

    def truncate(self, size: int) -> None:
        """Keep the first ``size`` entries."""
        del self.a[size:], self.b[size:], self.values[size:]

    def indices(self, bits: int) -> np.ndarray:
        return mix(Kind.UNSALTED, np.asarray(self.a, dtype=np.uint64), np.asarray(self.b, dtype=np.uint64), bits)

    def value_array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float32)
