"""A standard-library stand-in for the ``math_verify`` package's ``parse`` and ``verify``.

The SPADE reference's prompts tell designers to ``from math_verify import parse,
verify``. When the real package is not installed, the sandbox worker serves
this module under that name. It reads what generated games compare: integers,
decimals, fractions (``3/4``, ``\\frac{3}{4}``), percentages, a ``\\boxed{}`` or
``$...$`` around them, and plain text; ``verify`` is true when both sides read
as the same number (within 1e-9 relative) or as the same normalised text.
"""

from __future__ import annotations

import re
from fractions import Fraction

_FRAC = re.compile(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}")
_WRAPPERS = re.compile(r"\\boxed\{(.*)\}|^\$+(.*?)\$+$", re.DOTALL)


def _number(text: str) -> Fraction | float | None:
    text = _FRAC.sub(r"(\1)/(\2)", text).replace(",", "").replace(" ", "")
    text = text.replace("(", "").replace(")", "")
    percent = text.endswith("%")
    text = text.rstrip("%")
    try:
        value: Fraction | float = Fraction(text)
    except (ValueError, ZeroDivisionError):
        try:
            value = float(text)
        except ValueError:
            return None
    return value / 100 if percent else value


def parse(text: object) -> list[object]:
    """What the text says: ``[number]`` when it reads as one, else ``[normalised text]`` (``[]`` if empty)."""
    s = str(text).strip()
    for _ in range(4):  # a box in dollars in a box is as deep as answers go
        match = _WRAPPERS.search(s)
        if not match:
            break
        s = next(g for g in match.groups() if g is not None).strip()
    if not s:
        return []
    number = _number(s)
    return [number] if number is not None else [" ".join(s.lower().split())]


def verify(gold: list[object], answer: list[object]) -> bool:
    """Whether two parsed values are equal: numbers within 1e-9 relative, text exactly."""
    if not gold or not answer:
        return False
    a, b = gold[0], answer[0]
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)), abs(float(b)))


__all__ = ["parse", "verify"]
