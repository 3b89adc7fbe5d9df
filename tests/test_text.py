"""Safe text: what an environment or a model returns never crashes the store or acts on a terminal."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from spadegym.designers.extraction import extract_code, repair_boxed_braces
from spadegym.text import one_line, safe_text, storable

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain text\nwith\ttabs", "plain text\nwith\ttabs"),
    ("\x1b[31mred\x1b[0m", "red"),
    ("copy \x1b]52;c;cm0gLXJmIH4=\x07me", "copy me"),
    ("title \x1b]0;pwned\x1b\\done", "title done"),
    ("bell\x07 back\x08 cr\r del\x7f csi\x9b2J", "bell back cr del csi2J"),
    ("lone \ud800 surrogate", "lone \ufffd surrogate"),
    ("pair \U0001f3b2 stays", "pair \U0001f3b2 stays"),
])
def test_safe_text_strips_control_sequences_and_replaces_lone_surrogates(raw: str, shown: str) -> None:
    assert safe_text(raw) == shown


def test_safe_text_is_linear_on_hostile_input() -> None:
    started = time.perf_counter()
    safe_text("\x1b]" * 200_000 + "\x1b[" * 200_000 + "\ud800" * 100_000)
    # Linear: well under a second; quadratic: hours. The bound is generous for a loaded machine.
    assert time.perf_counter() - started < 20.0


def test_storable_text_encodes_as_utf8() -> None:
    assert storable("a\ud800b").encode("utf-8") == b"a?b"
    assert storable("\x1b[31m") == "\x1b[31m"  # only encoding is fixed here


@pytest.mark.parametrize(("name", "shown"), [
    ("games/guess_env.py", "games/guess_env.py"),
    ("jeu/énigme 1.py", "jeu/énigme 1.py"),
    ("a\nvalid b.py", "'a\\nvalid b.py'"),
    ("esc\x1b[2J\ud800.py", "'esc\\x1b[2J\\ud800.py'"),
    ("back\\n.py", "'back\\\\n.py'"),  # a literal backslash-n is told apart from a newline
])
def test_a_name_shows_on_one_line_and_unlike_any_other(name: str, shown: str) -> None:
    assert one_line(name) == shown and "\n" not in shown


def test_code_extraction_survives_a_parser_that_gives_up() -> None:
    source = (HOSTILE / "deep_expression.py").read_text()
    assert extract_code(f"Here it is:\n```python\n{source}\n```").code
    repair_boxed_braces(source + '\nX = f"\\\\boxed{' + "-" * 3000 + '1}"\n')  # no exception


def spadegym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True,
                          encoding="utf-8", errors="strict", timeout=120)


@pytest.mark.parametrize("name", ["terminal_escapes", "surrogates"])
def test_play_and_validate_print_hostile_text_safely(name: str) -> None:
    path = str(HOSTILE / f"{name}.py")
    played = spadegym("play", path, "--agent", "random", "--episodes", "2", "--hinted")
    checked = spadegym("validate", path)
    for proc in (played, checked):
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not any(ch in proc.stdout for ch in "\x1b\x07\x08\ud800")
    assert "return" in played.stdout and "valid" in checked.stdout
