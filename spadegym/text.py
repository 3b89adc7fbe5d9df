"""Text that came from untrusted code, made safe to store and to print.

Environment files and models can return any string: lone surrogates
(``"\\ud800"``) that no UTF-8 encoder accepts, and terminal control sequences
(colours, cursor moves, a clipboard write) that would act on the operator's
terminal. ``safe_text`` removes both; it runs where such text enters the host
(every worker reply) and where text leaves it (the command line's text output).
"""

from __future__ import annotations

import re

# An escape sequence (CSI, OSC up to its terminator, or ESC + one character), else one
# unsafe character: C0 controls except tab and newline, DEL, C1 controls, lone surrogates.
_UNSAFE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[\x20-\x7e]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    r"|[\ud800-\udfff]"
)
# One character class: a quick test that most text passes, so the sequences above are parsed only when needed.
_SUSPECT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _replace(match: re.Match[str]) -> str:
    # A lone surrogate is a character that was lost: mark it; control sequences just go.
    return REPLACEMENT if "\ud800" <= match.group()[0] <= "\udfff" else ""


def safe_text(text: str) -> str:
    """``text`` without control sequences and with lone surrogates replaced (linear time).

    >>> safe_text("ok\\x1b[31m red\\x1b]52;c;cGF3bmVk\\x07 \\ud800")
    'ok red \\ufffd'
    """
    if _SUSPECT.search(text) is None:
        return text
    return _UNSAFE.sub(_replace, text)


def one_line(name: str) -> str:
    """A name (a file's, a level's) printed on one line, never mistaken for another.

    A name shows as it is when every character prints and none is a backslash; otherwise as Python's ``repr``
    writes it, quoted with escapes, so a newline in a file name cannot start a forged line of output and
    every name can be told apart from every other (a shown-as-is name never holds a backslash, an escaped one does).

    >>> print(one_line("games/guess.py"), one_line("a\\nvalid b.py"))
    games/guess.py 'a\\nvalid b.py'
    """
    return name if name.isprintable() and "\\" not in name else repr(name)


def quoted(text: str, limit: int = 40) -> str:
    """``text`` in a message: quoted with Python's escapes, only its first ``limit`` characters when longer,
    with its length (a client's or a file's value is echoed, never in full).

    >>> quoted("x" * 1000, 5)
    "'xxxxx'... (1,000 characters)"
    """
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def is_safe(text: str) -> bool:
    """Whether ``safe_text`` would leave ``text`` as it is."""
    return _SUSPECT.search(text) is None


#: What XML 1.0 refuses beyond what ``safe_text`` removes (JUnit readers reject the whole file for one).
_NOT_XML = re.compile(r"[\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``safe_text`` that an XML 1.0 document may hold (JUnit for CI systems).

    >>> xml_text("case\\x00\\x1b[2Jone\\uffff")
    'caseone'
    """
    return _NOT_XML.sub("", safe_text(text))


def storable(text: str) -> str:
    """``text`` as valid UTF-8: lone surrogates replaced, nothing else changed."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
