"""Is the answer given away? Heuristics that keep false alarms rare.

The answer is the last action of ``solution()``. It only counts as given away
when it is *distinctive*: at least ``min_digits`` digits for a number and ``min_chars`` characters
otherwise, matched as a whole word, and, for the observation, not one of the
listed valid actions (a menu is not a leak; a hint naming the right entry is).
It must also be *specific to the instance*:
text every instance shows (instructions, command lists) mentions answers such
as "open door" without revealing anything, so a mention counts only when another
instance's observation does not carry it, or when a one-step answer is the same
constant in identical instances (a "password" environment).
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
    menu: list[str] | None = None      # valid actions shown with the observation
    other_text: str | None = None      # the answer of another instance (second seed)


def mentions(text: str, answer: str) -> bool:
    """``answer`` appears in ``text`` as a whole word (case-insensitive, whitespace-tolerant)."""
    words = answer.split()
    if not words:
        return False
    pattern = r"\s+".join(re.escape(w) for w in words)
    return re.search(rf"(?<![\w.]){pattern}(?![\w]|\.\d)", text, re.IGNORECASE) is not None


def is_distinctive(answer: Answer, min_chars: int, min_digits: int, menu_counts: bool = True) -> bool:
    """Long enough not to match by chance, and (for observations) not just one of the listed choices."""
    text = answer.text.strip()
    if not text:
        return False
    if menu_counts and answer.menu and text.casefold() in {m.strip().casefold() for m in answer.menu}:
        return False
    if _NUMBER.fullmatch(text):
        return sum(ch.isdigit() for ch in text) >= min_digits
    return len(text) >= min_chars


def _instance_specific(answer: Answer, text: str, other_observation: str | None,
                       same_instances: bool) -> bool:
    if other_observation is None:
        return True
    if not mentions(other_observation, answer.text):
        return True
    # Every instance shows it: harmless instructions, unless a one-step answer never changes.
    return answer.single_step and same_instances and answer.other_text == answer.text


def leaks_in_observation(answer: Answer, observation: str, other_observation: str | None,
                         min_chars: int, min_digits: int) -> bool:
    """The first observation reveals this instance's answer."""
    if not is_distinctive(answer, min_chars, min_digits) or not mentions(observation, answer.text):
        return False
    return _instance_specific(answer, observation, other_observation,
                              same_instances=other_observation == observation)


def leaks_in_hint(answer: Answer, hint: str, min_chars: int, min_digits: int) -> bool:
    """The hint states the answer itself (a multi-step answer every instance shares is just a command).

    Unlike the observation, a hint that names the right entry of the menu does give it away.
    """
    if not is_distinctive(answer, min_chars, min_digits, menu_counts=False) or not mentions(hint, answer.text):
        return False
    return answer.single_step or answer.other_text is None or answer.other_text != answer.text
