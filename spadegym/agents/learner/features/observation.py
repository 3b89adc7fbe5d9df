"""Observation features, shared by every action of a view, and the parsed lines the pair features read.

An observation is read line by line; a line may carry a label, a short phrase
set apart from its value (``position`` in ``position: 1 2``, ``position = 1 2``,
``position | 1 2``, ``position -> 1 2`` or ``[position] 1 2``: a game laid out
another way reads as the same lines). Its features are the words, bigrams
within a line, words tagged with their line's label (and, for a line's first
words, with their place in it), the labels themselves, and *relations*: the
numbers of two labelled lines compared slot by slot (``position: 1 2`` against
``key: 3 2`` gives row <, column =), because whether to go up or down is a
comparison, which a sum of per-line features cannot express.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from ....envfile.contract import HINT_PREFIX
from .hashing import BoundedMemo, Kind, TokenHashes, keyed, mix, mix_int

TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
WORD = re.compile(r"[a-z0-9]+")
# A line label: a short phrase starting with a letter, then a separator ("position: 1 2", "hint: ...", "turns = 3",
# "key | 4", "goal -> 5"), or the phrase in brackets ("[turns] 3"): a layout is a convention, not a new game.
_LABEL = re.compile(r"^\s*(?:\[\s*([a-z][a-z0-9 _\-]{0,23}?)\s*\]|([a-z][a-z0-9 _\-]{0,23}?)\s*(?::|=>?|\||->))\s?(.*)$")
_NO_LABEL = "_"
_ALL_LINES = "*"  # the label of all lines read together
HINT_LABEL = HINT_PREFIX.split(":")[0]
_HINT_TOKENS = 64  # the hint line's own budget, outside max_tokens: a long observation must not cut it off
NUMBERS = 4  # leading numbers of a line compared with other lines' numbers
_NUMERIC_LINES = 8  # labelled lines whose numbers are compared (the pairs grow quadratically)
_SLOTS = 6  # leading tokens of a line that are also tagged with their place in the line
_SLOT_STRIDE = 0x10000000B  # moves a slot-tagged label clear of every 32-bit label hash
_REF_WORDS = 8  # words of a labelled line that reference features may name (numbers excluded)
_LABELLED_LINES = 32  # labelled lines an action may refer to (long observations are cut)
_TAG_MIX = 0x100000001B3  # folds a (label, word) pair into one 64-bit key
_MASK64 = (1 << 64) - 1
_REL_A, _REL_B = 0x9E3779B1, 0x85EBCA77  # fold two labels and a slot into one relation key
_LINE_MEMO_LIMIT = 50_000  # lines a LineReader remembers before it forgets them all


@dataclass
class Line:
    """The words of all lines sharing one label, read as one line: what overlap features compare an action with."""

    label_hash: int
    words: frozenset[str]
    text: str  # " w1 w2 ... ", for contiguous-containment tests
    count: int


@dataclass
class LabelledLine:
    """One labelled line as written (not merged): what an action can refer to (``job 4: deadline 6``)."""

    label_words: frozenset[str]
    numbers: tuple[int, ...]
    word_set: frozenset[str]
    stem: str  # the label without its numbers ("clue" for "clue 2")
    named: tuple[str, ...]  # its first words that are not numbers, for reference features
    #: verb -> the hashed key of "that verb's actions mention this line" (``references``), made once
    keys: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Observation:
    idx: np.ndarray
    val: np.ndarray
    tagged: np.ndarray  # uint64 keys of the distinct (label, word) pairs, crossed with action tokens
    lines: list[Line]
    labelled: list[LabelledLine]


@dataclass
class ReadLine:
    """What one line of an observation contributes, read once however often the line recurs."""

    label: str
    labelled: bool  # the line has a label (it was matched, not defaulted)
    hint: bool
    label_hash: int
    tokens: list[str]
    entries_a: list[int]  # its observation entries, in order (``mix(0, a, b)`` is an entry's index)
    entries_b: list[int]
    tags: list[tuple[tuple[int, int], tuple[int, int] | None]]  # per token: its tagged pair, and its slot pair
    numbers: tuple[int, ...]
    words: list[str]
    reference: LabelledLine | None  # what actions may refer to: a labelled line other than the hint
    tagged: dict[tuple[int, int], int]  # ``tags`` flattened, in order (an ordered set), each to its ``fold``
    line: Line | None  # its words as a ``Line``, for overlaps (None: it has no words)
    #: hash bits -> its entries' feature indices, hashed once (``hash_lines``): a recurring line costs a view
    #: one array, not a hash
    indices: dict[int, np.ndarray] = field(default_factory=dict, repr=False)


def hash_lines(lines: list[ReadLine], bits: int) -> None:
    """Hash the entries of the lines not hashed yet at ``bits``, all in one call (numpy's cost is per call)."""
    fresh = list({id(line): line for line in lines if bits not in line.indices}.values())
    if not fresh:
        return
    a = np.concatenate([np.asarray(line.entries_a, dtype=np.uint64) for line in fresh])
    b = np.concatenate([np.asarray(line.entries_b, dtype=np.uint64) for line in fresh])
    idx = mix(Kind.UNSALTED, a, b, bits)
    ends = np.cumsum([len(line.entries_a) for line in fresh])
    for line, part in zip(fresh, np.split(idx, ends[:-1])):
        line.indices[bits] = part


def fold(pair: tuple[int, int]) -> int:
    """The 64-bit key of a tagged (label, word) pair, crossed with action tokens (``featurizer``)."""
    return (pair[0] * _TAG_MIX & _MASK64) ^ pair[1]


def _read_line(label: str, labelled: bool, hint: bool, tokens: list[str], hashes: TokenHashes) -> ReadLine:
    lh = hashes(label)
    a, b = [keyed(Kind.OBS_LABEL, lh)], [0]
    tags: list[tuple[tuple[int, int], tuple[int, int] | None]] = []
    prev = 0
    for slot, tok in enumerate(tokens):
        th = hashes(tok)
        a += (keyed(Kind.OBS_WORD, th), keyed(Kind.OBS_BIGRAM, prev), keyed(Kind.OBS_TAGGED, lh))
        b += (0, th, th)
        prev = th
        # where a word stands in a short line matters: "position: 1 2"
        tags.append(((lh, th), (lh + (slot + 1) * _SLOT_STRIDE, th) if slot < _SLOTS else None))
    numbers = tuple(int(t) for t in tokens if t.isdigit() and len(t) < 10)[:NUMBERS]
    words = [t for t in tokens if WORD.fullmatch(t)]
    reference = _labelled_line(label, numbers, words) if labelled and not hint else None
    flat = {key: fold(key) for pair, slotted in tags for key in (pair, slotted) if key is not None}
    line = Line(lh, frozenset(words), " " + " ".join(words) + " ", len(words)) if words else None
    return ReadLine(label, labelled, hint, lh, tokens, a, b, tags, numbers, words, reference, flat, line)


class LineReader(BoundedMemo):
    """A bounded memo of each line's reading: the lines of a game's observations recur from step to
    step and from episode to episode (its rules, its hint), and reading them is most of a view's cost."""

    def __init__(self, hashes: TokenHashes, limit: int = _LINE_MEMO_LIMIT) -> None:
        super().__init__(limit)
        self.hashes = hashes
        #: (hash bits, label a, label b) -> the relation entries the two labels' numbers can make
        self.relations: dict[tuple[int, int, int], list[list[Relation]]] = {}

    def clear(self) -> None:
        super().clear()
        self.relations.clear()

    def compute(self, key: str) -> ReadLine:
        m = _LABEL.match(key)
        label, content = ((m.group(1) or m.group(2)).strip(), m.group(3)) if m else (_NO_LABEL, key)
        return _read_line(label, m is not None, label == HINT_LABEL, TOKEN.findall(content), self.hashes)

    def read(self, raw: str, budget: int) -> ReadLine:
        """The line, its tokens cut at ``budget`` (the hint line at its own budget)."""
        line = self(raw)
        limit = _HINT_TOKENS if line.hint else budget
        if len(line.tokens) <= limit:
            return line
        return _read_line(line.label, line.labelled, line.hint, line.tokens[:limit], self.hashes)


def read_observation(observation: str, hashes: TokenHashes, bits: int, max_tokens: int,
                     max_tagged: int, lines: LineReader | None = None) -> Observation:
    """The observation's features and lines; past ``max_tokens`` tokens only the hint line is read.

    ``lines``: the memo of line readings to use (a featurizer keeps one); by default a fresh one.
    """
    reader = lines or LineReader(hashes)
    read: list[ReadLine] = []
    tagged: dict[tuple[int, int], int] = {}  # an ordered set: the cross features follow its order
    merged: dict[int, Line] = {}
    numeric: dict[int, tuple[int, ...]] = {}  # label -> its first numbers
    labelled: list[LabelledLine] = []
    budget = max_tokens
    for raw in observation.lower().splitlines():
        if budget <= 0 and not reader(raw).hint:
            continue  # the hint line comes last: a long observation must not cut it off
        line = reader.read(raw, budget)
        budget -= 0 if line.hint else len(line.tokens)
        lh = line.label_hash
        read.append(line)
        if len(tagged) + len(line.tagged) <= max_tagged:  # room for all: the per-word checks below all pass
            tagged.update(line.tagged)
        elif len(tagged) < max_tagged:
            for pair, slotted in line.tags:
                if len(tagged) < max_tagged:
                    tagged[pair] = fold(pair)
                    if slotted is not None:
                        tagged[slotted] = fold(slotted)
        if line.numbers and lh not in numeric and len(numeric) < _NUMERIC_LINES:
            numeric[lh] = line.numbers
        if line.reference is not None and len(labelled) < _LABELLED_LINES:
            labelled.append(line.reference)
        if line.line is not None:
            _merge_line(merged, line.line)
    hash_lines(read, bits)
    parts = [_bias_index(bits)] + [line.indices[bits] for line in read]  # in any order: counted below
    if len(numeric) > 1:
        parts.append(_relations(numeric, tagged, max_tagged, reader, bits))
    if merged:  # all lines together: overlap with the observation as a whole
        every = list(merged.values())
        merged[-1] = Line(hashes(_ALL_LINES), frozenset().union(*(x.words for x in every)),
                          "".join(x.text for x in every), sum(x.count for x in every))
    entries = np.concatenate(parts)
    idx, counts = _counted(entries)
    val = counts.astype(np.float32) / np.float32(len(entries))  # sums to 1: see ``featurizer``
    keys = np.fromiter(tagged.values(), dtype=np.uint64, count=len(tagged))
    return Observation(idx, val, keys, list(merged.values()), labelled)


@functools.lru_cache(maxsize=8)
def _bias_index(bits: int) -> np.ndarray:
    """The index of the observation's bias entry (every view has it)."""
    return mix(Kind.UNSALTED, np.array([keyed(Kind.OBS_BIAS, 0)], dtype=np.uint64), np.zeros(1, dtype=np.uint64), bits)


def _counted(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_counts=True)`` without its generic overhead: the same sorted values and counts."""
    s = np.sort(x)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.empty(len(starts), dtype=np.int64)
    counts[:-1] = starts[1:] - starts[:-1]
    counts[-1] = len(s) - starts[-1]
    return s[starts], counts


def _labelled_line(label: str, numbers: tuple[int, ...], words: list[str]) -> LabelledLine:
    label_words = WORD.findall(label)
    named = tuple(dict.fromkeys(w for w in words if not w.isdigit()))[:_REF_WORDS]
    return LabelledLine(frozenset(label_words), tuple(numbers), frozenset(words),
                        " ".join(w for w in label_words if not w.isdigit()), named)


def _merge_line(lines: dict[int, Line], line: Line) -> None:
    """Lines sharing a label are read as one."""
    known = lines.get(line.label_hash)
    if known is None:
        lines[line.label_hash] = line
    else:
        lines[line.label_hash] = Line(line.label_hash, known.words | line.words, known.text + line.text[1:],
                                      known.count + line.count)


#: A relation entry: its feature index, its tagged (relation, sign) pair and that pair's fold.
Relation = tuple[int, tuple[int, int], int]


def _relations(numeric: dict[int, tuple[int, ...]], tagged: dict[tuple[int, int], int], max_tagged: int,
               reader: LineReader, bits: int) -> np.ndarray:
    """Compare the leading numbers of every two labelled lines, slot by slot (<, = or >): their entries'
    indices. Each two labels' possible entries are made once (``reader.relations``): a game's labels recur."""
    out: list[int] = []
    labels = list(numeric)
    memo = reader.relations
    for i, la in enumerate(labels):
        for lb in labels[i + 1:]:
            table = memo.get((bits, la, lb))
            if table is None:
                if len(memo) > reader.limit:
                    memo.clear()
                table = memo[(bits, la, lb)] = _relation_table(la, lb, bits)
            for slot, (x, y) in enumerate(zip(numeric[la], numeric[lb])):
                index, pair, key = table[slot][(x > y) - (x < y) + 1]
                out.append(index)
                if len(tagged) < max_tagged:
                    tagged[pair] = key
    return np.array(out, dtype=np.int64)


def _relation_table(la: int, lb: int, bits: int) -> list[list[Relation]]:
    """Per slot, the entry of each comparison (<, =, >) of label ``la``'s number with label ``lb``'s."""
    table = []
    for slot in range(NUMBERS):
        rel = (la * _REL_A + lb * _REL_B + slot) & 0xFFFFFFFF
        table.append([(mix_int(Kind.UNSALTED, keyed(Kind.OBS_RELATION, rel), sign, bits), (rel, sign),
                       fold((rel, sign))) for sign in (1, 2, 3)])
    return table
