"""A view's features put together, and a bounded cache of recent views."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .actions import Actions
from .hashing import Entries, Kind, TokenHashes, mix
from .observation import LineReader, read_observation
from .overlap import OverlapMemo, add_overlaps, word_index
from .references import reference_entries

_VIEW_OVERHEAD = 96  # ten small numpy arrays per cached view, in ~12-byte entry units
#: Feature entries (~12 bytes each) a view holds at most: ~10x the largest view of a built-in family, so
#: only menus of hundreds of actions reach it (the sandbox lets a file list 4,096); past it each action
#: keeps fewer. A sixteenth is for the entries the hidden layer reads (the actions' own, overlap and
#: reference entries: 16 floats of work each), the rest for cross entries.
VIEW_ENTRIES = 1 << 17
_DEEP_SHARE = 16


@dataclass
class ViewFeatures:
    """Sparse features of one observation and its candidate actions.

    For action j, ``pair_idx[pair_ptr[j]:pair_ptr[j + 1]]`` (with ``pair_val``)
    are its action, overlap and reference features (read by both parts of the
    scorer) and ``cross_idx[cross_ptr[j]:cross_ptr[j + 1]]`` its cross features
    (read by the wide part only: they are many, and the hidden layer forms its
    own conjunctions). Every action has at least one pair feature (its whole
    text) and the observation at least one (a bias), so no segment is empty.
    """

    obs_idx: np.ndarray  # int64
    obs_val: np.ndarray  # float32
    pair_idx: np.ndarray  # int64
    pair_val: np.ndarray  # float32
    pair_ptr: np.ndarray  # int64, len = actions + 1
    cross_idx: np.ndarray  # int64
    cross_val: np.ndarray  # float32
    cross_ptr: np.ndarray  # int64, len = actions + 1
    pair_len: np.ndarray = field(init=False)  # entries per action (batching reads these, not the pointers)
    cross_len: np.ndarray = field(init=False)
    #: What the cache budget counts: stored entries plus the arrays' fixed overhead (~1 KB); counted once.
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.pair_len = np.diff(self.pair_ptr)
        self.cross_len = np.diff(self.cross_ptr)
        self.size = len(self.obs_idx) + len(self.pair_idx) + len(self.cross_idx) + _VIEW_OVERHEAD


class Featurizer:
    """Turns (observation, valid actions) into ``ViewFeatures``, with a bounded cache.

    The cache's size is counted in stored feature entries and it evicts
    oldest-first, so memory stays bounded however many distinct observations
    a run produces.
    """

    def __init__(self, bits: int = 16, max_tokens: int = 384, max_tagged: int = 256,
                 cache_entries: int = 8_000_000, view_entries: int = VIEW_ENTRIES, verb_free: bool = False):
        self.bits = bits
        self.verb_free = verb_free  # reference features also keyed without the verb (see ``references``)
        self.max_tokens = max_tokens  # long observations are cut: cost stays bounded per view
        self.max_tagged = max_tagged
        self.view_entries = view_entries  # the budget of one view, however long its menu (see _build)
        self.cache_entries = cache_entries  # budget in feature entries (~12 bytes each): ~96 MB by default
        self._views: OrderedDict[tuple[str, tuple[str, ...]], ViewFeatures] = OrderedDict()
        self._cached = 0
        self._hashes = TokenHashes()
        self._lines = LineReader(self._hashes)
        self._actions = Actions(self._hashes, bits)
        self._overlaps = OverlapMemo()

    def view(self, observation: str, actions: list[str]) -> ViewFeatures:
        key = (observation, tuple(actions))
        hit = self._views.get(key)
        if hit is not None:
            self._views.move_to_end(key)
            return hit
        features = self._build(observation, actions)
        if features.size <= self.cache_entries:
            self._views[key] = features
            self._cached += features.size
            while self._cached > self.cache_entries:
                _, old = self._views.popitem(last=False)
                self._cached -= old.size
        return features

    @property
    def cached_entries(self) -> int:
        return self._cached

    def clear(self) -> None:
        self._views.clear()
        self._cached = 0
        self._actions.clear()
        self._lines.clear()
        self._overlaps.clear()
        self._hashes.clear()

    def _build(self, observation: str, actions: list[str]) -> ViewFeatures:
        """The view's features, within ``view_entries`` (plus one per action on a menu longer than 1/16 of it).

        Each action keeps at most its share of a sixteenth of the budget (its whole text first,
        then its words, overlap and reference entries), and the observation words crossed with the
        actions' words are cut to fit the rest, so memory and work per view are bounded by the
        budget, not by the menu the environment lists.
        """
        obs = read_observation(observation, self._hashes, self.bits, self.max_tokens, self.max_tagged, self._lines)
        acts = [self._actions(action) for action in actions]
        deep = self.view_entries // _DEEP_SHARE
        share = max(1, deep // max(1, len(acts)))
        owns = [act.own_entries(share) for act in acts]
        index = word_index(obs.lines)
        # Words every action has ("say" in "say amber", "say dune") tell the actions nothing apart.
        common = frozenset.intersection(*(a.words for a in acts)) if len(acts) > 1 else frozenset()
        # The overlap and reference entries of all actions are hashed in one call.
        pair = Entries()
        counts = []
        for act, own, references in zip(acts, owns, reference_entries(obs.labelled, acts, self._hashes, self.verb_free)):
            start, room = len(pair), share - len(own[0])
            add_overlaps(pair, obs.lines, index, act, act.words - common, room, self._overlaps)
            pair.extend(references, limit=room - (len(pair) - start))
            counts.append(len(pair) - start)
        pair_idx, pair_val = pair.indices(self.bits), pair.value_array()
        idx_parts: list[np.ndarray] = []
        val_parts: list[np.ndarray] = []
        start = 0
        for (own_idx, own_val), count in zip(owns, counts):
            idx_parts += [own_idx, pair_idx[start:start + count]]
            val_parts += [own_val, pair_val[start:start + count]]
            start += count
        pair_len = np.array([len(own[0]) for own in owns]) + np.array(counts, dtype=np.int64)
        # Cross features: every tagged observation word x every action token, one action after another;
        # on a long menu only the first tagged words, so that they fit in the rest of the budget.
        tokens = np.concatenate([a.tokens for a in acts])
        tagged = obs.tagged[:(self.view_entries - deep) // max(1, len(tokens))]
        cross_idx = np.ascontiguousarray(mix(Kind.CROSS, tagged[None, :], tokens[:, None], self.bits)).ravel()
        cross_len = np.array([len(a.tokens) for a in acts], dtype=np.int64) * len(tagged)
        # Adam moves each touched weight by about lr per step, so a feature group moves a score by about
        # lr x (sum of its values): observation and action groups sum to 1; cross features get 1/sqrt(n),
        # small enough for long observations and large enough to learn a one-word rule quickly.
        scale = np.float32(1.0 / np.sqrt(max(1, len(tagged))))
        return ViewFeatures(
            obs.idx, obs.val,
            _concat(idx_parts, np.int64), _concat(val_parts, np.float32), _pointers(pair_len),
            cross_idx, np.full(len(cross_idx), scale, dtype=np.float32), _pointers(cross_len),
        )


def _pointers(lengths: np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return ptr


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
