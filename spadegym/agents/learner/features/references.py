"""Reference features: the labelled line an action names, among actions that share their first word.

Of "run job 1" and "run job 4", the words that set one apart ("4") name the
labelled line it refers to ("job 4: deadline 4, duration unknown"). The action
gets that line's words (``REF_WORD``), whether each of its numbers is the
smallest or the largest among the lines its siblings refer to (``REF_MIN``,
``REF_MAX``: the earliest deadline), and how much of its distinct part other
lines mention (``MENTIONS``), keyed by their label without numbers ("clue" for
"clue 2: ada has an alibi" and "suspect ada"). Keys use the verb and the
label's other words, never the words that differ, so they hold for any number
of jobs or clues.
"""

from __future__ import annotations

from .actions import Action
from .hashing import Entries, Kind, TokenHashes
from .observation import NUMBERS, LabelledLine

_MASK48 = (1 << 48) - 1  # reference keys stay 48-bit: they are mixed with a word hash
_KEY_MIX = 0x9E3779B1  # folds a reference key and a word into one key
_SLOT_MIX = 31  # folds a reference key and a number's slot into one key
_KEYS_PER_LINE = 64  # verbs a line keeps its mention key for, before it forgets them (menus with many verbs)
_ANY = "\x00"  # what verb-free keys hold in place of the verb and the label's other words (no word is this)


def reference_entries(labelled: list[LabelledLine], actions: list[Action], hashes: TokenHashes,
                      verb_free: bool = False) -> list[Entries]:
    """Each action's reference entries.

    Siblings are the actions sharing a first word; what sets one apart must all
    be in a line's label, with more besides ("job" of "job 4"), for the action
    to refer to that line. With ``verb_free`` every entry also comes keyed
    without the verb and the label's other words ("job" of "job 4"), so what
    it teaches holds for the same game with its actions (and the nouns they
    share with the lines) renamed.
    """
    out = [Entries() for _ in actions]
    if not labelled:
        return out
    siblings: dict[str, list[int]] = {}
    for j, action in enumerate(actions):
        if action.verb:
            siblings.setdefault(action.verb, []).append(j)
    for verb, members in siblings.items():
        if len(members) < 2:
            continue
        shared = frozenset.intersection(*(actions[j].words for j in members))
        prefixes = (verb, _ANY) if verb_free else (verb,)
        referred: dict[int, tuple[tuple[int, ...], LabelledLine]] = {}  # action -> (keys, line)
        for j in members:
            distinct = actions[j].words - shared
            if not distinct:
                continue
            # The lines whose label holds all of ``distinct`` and more besides, in line order.
            refers = [i for i, line in enumerate(labelled) if distinct < line.label_words]
            if refers:
                line = labelled[refers[0]]
                keys = (hashes(verb + "|" + " ".join(sorted(line.label_words - distinct))),)
                keys += (hashes(_ANY),) if verb_free else ()
                referred[j] = (keys, line)
                for key in keys:
                    out[j].add(Kind.REFERS, key)
                    for w in line.named:
                        out[j].add(Kind.REF_WORD, (key * _KEY_MIX + hashes(w)) & _MASK48)
            for i, line in enumerate(labelled):  # line order
                if line.stem and i not in refers:
                    n = len(distinct & line.word_set)
                    if n:
                        for prefix in prefixes:
                            out[j].add(Kind.MENTIONS, _stem_key(line, prefix, hashes), n / len(distinct))
        _extremes(referred, out)
    return out


def _stem_key(line: LabelledLine, prefix: str, hashes: TokenHashes) -> int:
    """The key of "``prefix`` mentions a line labelled ``line.stem``", made once per line (lines recur)."""
    key = line.keys.get(prefix)
    if key is None:
        if len(line.keys) >= _KEYS_PER_LINE:
            line.keys.clear()
        key = line.keys[prefix] = hashes(prefix + "|" + line.stem)
    return key


def _extremes(referred: dict[int, tuple[tuple[int, ...], LabelledLine]], out: list[Entries]) -> None:
    """Mark, slot by slot, the siblings whose referred line holds the smallest or the largest number."""
    if len(referred) < 2:
        return
    for slot in range(NUMBERS):
        have = {j: line.numbers[slot] for j, (_, line) in referred.items() if len(line.numbers) > slot}
        if len(have) < 2:
            continue
        low, high = min(have.values()), max(have.values())
        if low == high:
            continue
        for j, x in have.items():
            if x in (low, high):
                for key in referred[j][0]:
                    out[j].add(Kind.REF_MIN if x == low else Kind.REF_MAX, (key * _SLOT_MIX + slot) & _MASK48)
