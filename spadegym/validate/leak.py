"""Is the answer given away? Heuristics that keep false alarms rare.

The answer is the last action of ``solution()``. A text gives it away when it
mentions it as a whole word and all of these hold:

- *distinctive*: at least ``min_digits`` digits for a number, ``min_chars``
  characters otherwise (shorter answers match by chance);
- *singled out*: the text does not also name at least half of the other valid
  actions (listing the options is a menu, not a leak);
- *repeated*: when the other instance has another answer, its observation
  reveals that one too (a coincidence rarely repeats);
- *specific to the instance*: text every instance shows (instructions, command
  lists) names answers such as "open door" without revealing anything, so an
  observation counts only when another instance's observation lacks the answer,
  or when a one-step answer is the same constant in identical instances (a
  "password" environment); a hint counts unless the answer is a multi-step
  solution's final command shared by every instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)?")


@dataclass
class Answer:
    """An instance's answer and what the leak checks compare it with."""

    text: str
    single_step: bool                  # solution() is just this answer
    menu: list[str] | None = None      # valid actions right after reset
    other_text: str | None = None      # the answer of another instance (second seed)


#: Characters of an answer the checks look for: a longer answer is looked for by this prefix.
ANSWER_CHARS = 256
_SPACE = re.compile(r"\s+")


def normal(text: str) -> str:
    """Case-folded, with every run of whitespace one space: what ``mentions`` compares (linear)."""
    return _SPACE.sub(" ", text.casefold())


def mentions(text: str, answer: str, *, normalized: bool = False) -> bool:
    """``answer`` appears in ``text`` as a whole word (case-insensitive, whitespace-tolerant).

    Linear in ``len(text)``: a plain substring search plus a look at the characters
    on either side of each hit, never a regex built from the answer (which can
    backtrack quadratically on long hints). ``normalized``: ``text`` is ``normal()`` already.
    """
    needle = normal(answer).strip()
    if not needle:
        return False
    whole = len(needle) <= ANSWER_CHARS
    needle = needle[:ANSWER_CHARS]
    haystack = text if normalized else normal(text)
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or not _word_char(haystack[start - 1], dot=True)) and (not whole or _ends_word(haystack, end)):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _word_char(ch: str, dot: bool = False) -> bool:
    return ch.isalnum() or ch == "_" or (dot and ch == ".")


def _ends_word(text: str, end: int) -> bool:
    """No word character right after ``end``, nor a decimal part ("3" is not in "3.5")."""
    if end == len(text):
        return True
    if _word_char(text[end]):
        return False
    return not (text[end] == "." and end + 1 < len(text) and text[end + 1].isdigit())


def is_distinctive(answer: str, min_chars: int, min_digits: int) -> bool:
    text = answer.strip()
    if _NUMBER.fullmatch(text):
        return sum(ch.isdigit() for ch in text) >= min_digits
    return len(text) >= min_chars


def _named(answer: Answer, text: str, min_chars: int, min_digits: int) -> bool:
    """Distinctive, mentioned, and not just one entry of a listed menu."""
    text = normal(text)
    if not is_distinctive(answer.text, min_chars, min_digits) or not mentions(text, answer.text, normalized=True):
        return False
    key = answer.text.strip().casefold()
    others = [m for m in answer.menu or [] if m.strip() and m.strip().casefold() != key]
    listed = sum(mentions(text, m, normalized=True) for m in others)
    return not others or listed < max(1, len(others) // 2)


def leaks_in_observation(answer: Answer, observation: str, other_observation: str | None,
                         min_chars: int, min_digits: int) -> bool:
    """The first observation reveals this instance's answer.

    When the other instance has an answer of its own, its observation must reveal that one too: a
    number that is the answer by coincidence (a puzzle's data holds many) rarely is in two instances.
    """
    if not _named(answer, observation, min_chars, min_digits):
        return False
    if other_observation is not None and answer.other_text is not None and answer.other_text != answer.text:
        return mentions(other_observation, answer.other_text) and not mentions(other_observation, answer.text)
    if other_observation is None or not mentions(other_observation, answer.text):
        return True
    return answer.single_step and other_observation == observation and answer.other_text == answer.text


def leaks_in_hint(answer: Answer, hint: str, min_chars: int, min_digits: int) -> bool:
    """The hint states this instance's answer."""
    if not _named(answer, hint, min_chars, min_digits):
        return False
    return answer.single_step or answer.other_text is None or answer.other_text != answer.text
