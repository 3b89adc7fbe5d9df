"""Hashed features of an observation and its candidate actions.

The scorer sees two sparse vectors per (observation, action) pair:

- observation features, shared by all actions of a view: words, bigrams within
  a line, words tagged by their line's label (the text before ``:``, e.g.
  ``position`` in ``position: 1 2``), the labels themselves, and *relations*
  between the numbers of two labelled lines, slot by slot (``position: 1 2``
  vs ``key: 3 2``: row <, column =);
- pair features: the action's words and whole text, cross features (tagged
  observation word or relation x action word), and per-line *overlap*
  features that ask how much of the action appears in each labelled line
  (``ov``: share of the action's words found in the line, ``cov``: share of
  the line's words that the action covers, ``in``: the action's words appear
  contiguously in the line, ``eq``: the action is the whole line,
  ``distinct``: share of the words that set this action apart from the other
  actions found in the line, e.g. ``amber`` of ``say amber`` when every action
  starts with ``say``).

- reference features: among actions sharing their first word ("run job 1",
  "run job 4"), the words that set one apart ("4") name the labelled line it
  refers to ("job 4: deadline 4, duration unknown"). The action gets that
  line's words, whether each of its numbers is the smallest or the largest
  among the lines its sibling actions refer to (the earliest deadline), and
  how much of its distinct part other lines mention, keyed by their label
  without numbers ("clue" for "clue 2: ada has an alibi" and "suspect ada").
  Keyed by the verb and the label's other words, never by the words that
  differ, they hold for any number of jobs or clues.

Overlap features are keyed by the line label only, never by the words, so
what they learn transfers to environments never seen in training; this is how
the learner learns to follow the ``hint: <text>`` line in new environments.
``distinct`` matters most for transfer: without it the learner follows only
hints that repeat the whole action, not ``the code word is amber`` for ``say amber``
(the figures are in ``benchmarks/README.md``, ``benchmarks/learner.py``).

All indices come from a fixed hash (crc32 and integer mixing), never Python's
salted ``hash``, so features are the same in every process. A bounded cache
keeps the features of recent views: its size is counted in stored feature
entries and it evicts oldest-first, so memory stays bounded however many
distinct observations a run produces.
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...envfile.contract import HINT_PREFIX

_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_WORD = re.compile(r"[a-z0-9]+")
# A line label: a short phrase starting with a letter, then a colon ("position: 1 2", "hint: ...").
_LABEL = re.compile(r"^\s*([a-z][a-z0-9 _\-]{0,23}?)\s*:\s?(.*)$")
_NO_LABEL = "_"
_ALL_LINES = "*"
_VIEW_OVERHEAD = 96  # ten small numpy arrays per cached view, in ~12-byte entry units
_HINT_LABEL = HINT_PREFIX.split(":")[0]
_HINT_TOKENS = 64  # the hint line's own budget, outside max_tokens
_NUMBERS = 4  # leading numbers of a line compared with other lines' numbers
_NUMERIC_LINES = 8  # labelled lines with numbers taking part in comparisons (pairs grow quadratically)
_SLOTS = 6  # leading tokens of a line that are also tagged with their place in the line

# Feature kinds: the salt that keeps the index families apart in the one hash space.
_OBS_WORD, _OBS_BIGRAM, _OBS_TAGGED, _OBS_LABEL, _OBS_BIAS, _OBS_RELATION = 1, 2, 3, 4, 5, 6
_ACT_TOKEN, _ACT_TEXT, _CROSS = 11, 12, 13
_OVERLAP, _COVER, _CONTAINED, _EQUAL, _DISTINCT = 21, 22, 23, 24, 25
_REFERS, _REF_WORD, _REF_MIN, _REF_MAX, _MENTIONS = 31, 32, 33, 34, 35
_MASK48 = (1 << 48) - 1
_REF_WORDS = 8  # words of a referred line that become features (numbers excluded)
_LABELLED_LINES = 32  # labelled lines an action may refer to (long observations are cut)

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)


def token_hash(text: str) -> int:
    """A stable 32-bit hash of a string (the same in every process)."""
    return zlib.crc32(text.encode("utf-8", "replace"))


def mix(kind: int, a: np.ndarray | int, b: np.ndarray | int, bits: int) -> np.ndarray:
    """Index in ``[0, 2**bits)`` of the feature (kind, a, b); vectorised over a and b."""
    a64 = np.asarray(a, dtype=np.uint64)
    b64 = np.asarray(b, dtype=np.uint64)
    x = (a64 * _M1) ^ (b64 * _M2) ^ np.uint64(kind * 0x632BE59BD9B4E019 & 0xFFFFFFFFFFFFFFFF)
    x ^= x >> np.uint64(31)
    x *= _M3
    x ^= x >> np.uint64(29)
    return (x >> np.uint64(64 - bits)).astype(np.int64)


@dataclass
class ViewFeatures:
    """Sparse features of one observation and its candidate actions.

    For action j, ``pair_idx[pair_ptr[j]:pair_ptr[j + 1]]`` (with ``pair_val``)
    are its action and overlap features (read by both parts of the scorer) and
    ``cross_idx[cross_ptr[j]:cross_ptr[j + 1]]`` its cross features (read by the
    wide part only: they are many, and the hidden layer forms its own
    conjunctions). Every action has at least one pair feature (its whole text)
    and the observation at least one (a bias), so no segment is empty.
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

    def __post_init__(self) -> None:
        self.pair_len = np.diff(self.pair_ptr)
        self.cross_len = np.diff(self.cross_ptr)

    @property
    def size(self) -> int:
        """What the cache budget counts: stored entries plus the arrays' fixed overhead (~1 KB)."""
        return len(self.obs_idx) + len(self.pair_idx) + len(self.cross_idx) + _VIEW_OVERHEAD


@dataclass
class _Line:
    label_hash: int
    words: frozenset[str]
    text: str  # " w1 w2 ... " for contiguous-containment tests
    count: int


@dataclass
class _Labelled:
    """One labelled line as written (not merged): what an action can refer to (``job 4: deadline 6``)."""

    label_words: frozenset[str]
    numbers: tuple[int, ...]
    word_set: frozenset[str]
    stem: str  # the label without its numbers ("clue" for "clue 2")
    named: tuple[str, ...]  # its first words that are not numbers, for reference features


@dataclass
class _Observation:
    idx: np.ndarray
    val: np.ndarray
    tagged: np.ndarray  # uint64 hashes of the distinct (label, word) pairs
    lines: list[_Line]
    labelled: list[_Labelled]


@dataclass
class _Action:
    tokens: np.ndarray  # uint64 hashes of the words and of the whole text
    words: frozenset[str]
    text: str  # " w1 w2 ... "
    idx: np.ndarray
    val: np.ndarray
    verb: str  # its first word: actions sharing it are siblings ("run job 1", "run job 4")


class Featurizer:
    """Turns (observation, valid actions) into ``ViewFeatures``, with a bounded cache."""

    def __init__(self, bits: int = 16, max_tokens: int = 384, max_tagged: int = 256,
                 cache_entries: int = 2_000_000):
        self.bits = bits
        self.max_tokens = max_tokens  # long observations are cut: cost stays bounded per view
        self.max_tagged = max_tagged
        self.cache_entries = cache_entries  # budget in feature entries (~12 bytes each): ~24 MB by default
        self._views: OrderedDict[tuple[str, tuple[str, ...]], ViewFeatures] = OrderedDict()
        self._cached = 0
        self._actions: dict[str, _Action] = {}
        self._tokens: dict[str, int] = {}

    # -- public ---------------------------------------------------------------
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
        self._tokens.clear()

    # -- building -------------------------------------------------------------
    def _hash(self, text: str) -> int:
        h = self._tokens.get(text)
        if h is None:
            if len(self._tokens) > 200_000:  # a bounded memo, not a vocabulary
                self._tokens.clear()
            h = self._tokens[text] = token_hash(text)
        return h

    def _observation(self, observation: str) -> _Observation:
        kinds: list[int] = [_OBS_BIAS]
        first: list[int] = [0]
        second: list[int] = [0]
        tagged: dict[tuple[int, int], None] = {}
        lines: dict[int, _Line] = {}
        numeric: dict[int, list[int]] = {}  # label -> its first numbers
        labelled: list[_Labelled] = []
        budget = self.max_tokens
        for raw in observation.lower().splitlines():
            m = _LABEL.match(raw)
            label, content = (m.group(1).strip(), m.group(2)) if m else (_NO_LABEL, raw)
            hint = label == _HINT_LABEL
            if budget <= 0 and not hint:
                continue  # the hint line comes last: a long observation must not cut it off
            tokens = _TOKEN.findall(content)[:_HINT_TOKENS if hint else budget]
            budget -= 0 if hint else len(tokens)
            lh = self._hash(label)
            kinds.append(_OBS_LABEL)
            first.append(lh)
            second.append(0)
            prev = 0
            for slot, tok in enumerate(tokens):
                th = self._hash(tok)
                kinds += (_OBS_WORD, _OBS_BIGRAM, _OBS_TAGGED)
                first += (th, prev, lh)
                second += (0, th, th)
                prev = th
                if len(tagged) < self.max_tagged:
                    tagged[(lh, th)] = None
                    if slot < _SLOTS:  # where a word stands in a short line matters: "position: 1 2"
                        tagged[(lh + (slot + 1) * 0x10000000B, th)] = None
            numbers = [int(t) for t in tokens if t.isdigit() and len(t) < 10][:_NUMBERS]
            if numbers and lh not in numeric and len(numeric) < _NUMERIC_LINES:
                numeric[lh] = numbers
            words = [t for t in tokens if _WORD.fullmatch(t)]
            if m and not hint and len(labelled) < _LABELLED_LINES:
                label_words = _WORD.findall(label)
                named = tuple(dict.fromkeys(w for w in words if not w.isdigit()))[:_REF_WORDS]
                labelled.append(_Labelled(frozenset(label_words), tuple(numbers), frozenset(words),
                                          " ".join(w for w in label_words if not w.isdigit()), named))
            if words:
                line = lines.get(lh)
                text = " " + " ".join(words) + " "
                if line is None:
                    lines[lh] = _Line(lh, frozenset(words), text, len(words))
                else:  # lines sharing a label are read as one
                    lines[lh] = _Line(lh, line.words | set(words), line.text + text[1:], line.count + len(words))
        # Relations between the numbers of two labelled lines, slot by slot ("position: 1 2" vs
        # "key: 3 2" -> row <, column =): whether to go up or down is a comparison, which a sum of
        # per-line features cannot express but one relation feature crossed with "down" can.
        labels = list(numeric)
        for i, la in enumerate(labels):
            for lb in labels[i + 1:]:
                for slot, (x, y) in enumerate(zip(numeric[la], numeric[lb])):
                    rel = (la * 0x9E3779B1 + lb * 0x85EBCA77 + slot) & 0xFFFFFFFF
                    sign = (x > y) - (x < y) + 2
                    kinds.append(_OBS_RELATION)
                    first.append(rel)
                    second.append(sign)
                    if len(tagged) < self.max_tagged:
                        tagged[(rel, sign)] = None
        if lines:  # all lines together: overlap with the observation as a whole
            merged = list(lines.values())
            lines[-1] = _Line(self._hash(_ALL_LINES), frozenset().union(*(x.words for x in merged)),
                              "".join(x.text for x in merged), sum(x.count for x in merged))
        k = np.asarray(kinds, dtype=np.uint64)
        idx = mix(0, np.asarray(first, dtype=np.uint64) * np.uint64(1000003) + k,
                  np.asarray(second, dtype=np.uint64), self.bits)
        idx, counts = np.unique(idx, return_counts=True)
        val = counts.astype(np.float32) / np.float32(len(kinds))  # sums to 1: see _build
        pairs = np.asarray(list(tagged), dtype=np.uint64).reshape(-1, 2)
        tag_hash = pairs[:, 0] * np.uint64(0x100000001B3) ^ pairs[:, 1]
        return _Observation(idx, val, tag_hash, list(lines.values()), labelled)

    def _action(self, action: str) -> _Action:
        cached = self._actions.get(action)
        if cached is not None:
            return cached
        low = action.lower()
        tokens = _TOKEN.findall(low)[:32]
        words = [t for t in tokens if _WORD.fullmatch(t)]
        whole = self._hash(" ".join(tokens))
        hashes = [self._hash(t) for t in tokens] + ([whole] if len(tokens) != 1 else [])
        kinds = [_ACT_TOKEN] * (len(hashes) - (len(tokens) != 1)) + [_ACT_TEXT]
        if len(tokens) == 1:  # a one-token action: its token is its text
            hashes.append(whole)
        idx = mix(0, np.asarray(kinds, dtype=np.uint64), np.asarray(hashes, dtype=np.uint64), self.bits)
        val = np.full(len(idx), 1.0 / len(idx), dtype=np.float32)
        result = _Action(np.unique(np.asarray(hashes, dtype=np.uint64)), frozenset(words),
                         " " + " ".join(words) + " ", idx, val, words[0] if words else "")
        if len(self._actions) > 50_000:
            self._actions.clear()
        self._actions[action] = result
        return result

    def _build(self, observation: str, actions: list[str]) -> ViewFeatures:
        obs = self._observation(observation)
        acts = [self._action(action) for action in actions]
        # Words every action has ("say" in "say amber", "say dune") tell the actions nothing apart.
        common = frozenset.intersection(*(a.words for a in acts)) if len(acts) > 1 else frozenset()
        # Overlap entries of all actions are gathered first and hashed in one call (one per view, not
        # one per action: hashing dominated the cost of building a view).
        kinds: list[int] = []
        labels: list[int] = []
        values: list[float] = []
        references = self._references(obs.labelled, acts)
        ov_counts = []
        for act, extra in zip(acts, references):
            count = self._overlap(obs.lines, act, act.words - common, kinds, labels, values)
            for kind, key, value in extra:
                kinds.append(kind)
                labels.append(key)
                values.append(value)
            ov_counts.append(count + len(extra))
        ov_idx = mix(0, np.asarray(kinds, dtype=np.uint64), np.asarray(labels, dtype=np.uint64), self.bits)
        ov_val = np.asarray(values, dtype=np.float32)
        pair_idx: list[np.ndarray] = []
        pair_val: list[np.ndarray] = []
        start = 0
        for act, count in zip(acts, ov_counts):
            pair_idx += [act.idx, ov_idx[start:start + count]]
            pair_val += [act.val, ov_val[start:start + count]]
            start += count
        pair_len = np.array([len(a.idx) for a in acts]) + np.array(ov_counts, dtype=np.int64)
        # Cross features: every tagged observation word x every action token, one action after another.
        tokens = np.concatenate([a.tokens for a in acts])
        cross_idx = np.ascontiguousarray(mix(_CROSS, obs.tagged[None, :], tokens[:, None], self.bits)).ravel()
        cross_len = np.array([len(a.tokens) for a in acts], dtype=np.int64) * len(obs.tagged)
        # Adam moves each touched weight by about lr per step whatever its gradient, so a feature
        # group moves a score by about lr x (sum of its values) per step. Observation and action
        # groups sum to 1; cross features get 1/sqrt(n): a step moves them by <= lr*sqrt(256) even
        # on long observations (binary values collapsed the policy in one step on 30-line ones),
        # while a one-word rule ("light: red" -> "press red") is learnt sqrt(n) times faster than
        # with 1/n.
        scale = np.float32(1.0 / np.sqrt(max(1, len(obs.tagged))))
        return ViewFeatures(
            obs.idx, obs.val,
            _concat(pair_idx, np.int64), _concat(pair_val, np.float32), _pointers(pair_len),
            cross_idx, np.full(len(cross_idx), scale, dtype=np.float32), _pointers(cross_len),
        )

    def _references(self, labelled: list[_Labelled], acts: list[_Action]) -> list[list[tuple[int, int, float]]]:
        """Each action's reference entries (kind, key, value): see the module docstring.

        Siblings are the actions sharing a first word; what sets one apart must all be in
        a line's label, with more besides ("job" of "job 4"), for the action to refer to it.
        """
        out: list[list[tuple[int, int, float]]] = [[] for _ in acts]
        if not labelled:
            return out
        in_label: dict[str, list[int]] = {}
        in_text: dict[str, list[int]] = {}
        for i, line in enumerate(labelled):
            for w in line.label_words:
                in_label.setdefault(w, []).append(i)
            for w in line.word_set:
                in_text.setdefault(w, []).append(i)
        groups: dict[str, list[int]] = {}
        for j, act in enumerate(acts):
            if act.verb:
                groups.setdefault(act.verb, []).append(j)
        for verb, members in groups.items():
            if len(members) < 2:
                continue
            shared = frozenset.intersection(*(acts[j].words for j in members))
            referred: dict[int, tuple[int, _Labelled]] = {}  # action -> (key, line)
            for j in members:
                distinct = acts[j].words - shared
                if not distinct:
                    continue
                found: set[int] | None = None
                for w in distinct:
                    found = set(in_label.get(w, ())) if found is None else found & set(in_label.get(w, ()))
                    if not found:
                        break
                refers = {i for i in found or () if labelled[i].label_words - distinct}
                if refers:
                    line = labelled[min(refers)]
                    key = self._hash(verb + "|" + " ".join(sorted(line.label_words - distinct)))
                    referred[j] = (key, line)
                    out[j].append((_REFERS, key, 1.0))
                    out[j] += [(_REF_WORD, (key * 0x9E3779B1 + self._hash(w)) & _MASK48, 1.0) for w in line.named]
                mentions: dict[int, int] = {}
                for w in distinct:
                    for i in in_text.get(w, ()):
                        if i not in refers and labelled[i].stem:
                            mentions[i] = mentions.get(i, 0) + 1
                for i, n in mentions.items():
                    out[j].append((_MENTIONS, self._hash(verb + "|" + labelled[i].stem), n / len(distinct)))
            if len(referred) < 2:
                continue
            for slot in range(_NUMBERS):
                have = {j: line.numbers[slot] for j, (_, line) in referred.items() if len(line.numbers) > slot}
                if len(have) < 2:
                    continue
                low, high = min(have.values()), max(have.values())
                if low == high:
                    continue
                for j, x in have.items():
                    if x in (low, high):
                        out[j].append((_REF_MIN if x == low else _REF_MAX, (referred[j][0] * 31 + slot) & _MASK48, 1.0))
        return out

    @staticmethod
    def _overlap(lines: list[_Line], act: _Action, distinct: frozenset[str],
                 kinds: list[int], labels: list[int], values: list[float]) -> int:
        """Append the action's overlap entries (kind, line label, value); return how many."""
        before = len(kinds)
        n = len(act.words)
        if n:
            for line in lines:
                shared = len(act.words & line.words)
                if not shared:
                    continue
                kinds += (_OVERLAP, _COVER)
                labels += (line.label_hash, line.label_hash)
                values += (shared / n, shared / line.count)
                telling = len(distinct & line.words)
                if telling:  # how much of what sets this action apart the line names
                    kinds.append(_DISTINCT)
                    labels.append(line.label_hash)
                    values.append(telling / len(distinct))
                if line.text and act.text in line.text:
                    kinds.append(_CONTAINED)
                    labels.append(line.label_hash)
                    values.append(1.0)
                    if line.count == n and line.text == act.text:
                        kinds.append(_EQUAL)
                        labels.append(line.label_hash)
                        values.append(1.0)
        return len(kinds) - before


def _pointers(lengths: np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return ptr


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
