"""A code_edit reply is untrusted: reading it and applying its diff take time linear in its size, and a diff past
the bounds is refused at once."""

from __future__ import annotations

import time

from spadegym.designers.code_edit import MAX_DIFF_CHARS, MAX_HUNKS, apply_diff, apply_reply
from spadegym.designers.edit_form import MALFORMED, EditRefused


def source(lines: int) -> str:
    return "".join(f"    value_{i} = {i}\n" for i in range(lines))


def diff(lines: int, every: int = 20, added: int = 14) -> str:
    """One hunk every ``every`` lines, in order, whose context has trailing spaces the file lacks (so each is found
    only by its second reading), each replacing a line with ``added`` new ones."""
    hunks = []
    for i in range(0, lines - 1, every):
        new = "".join(f"+    value_{i + 1}_{j} = {j}  # a longer line that the edit adds\n" for j in range(added))
        hunks.append(f"@@ -{i} +{i} @@\n     value_{i} = {i}   \n-    value_{i + 1} = {i + 1}\n{new}")
    return "".join(hunks)


def seconds(text: str, patch: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        edited = apply_diff(text, patch)
        best = min(best, time.perf_counter() - started)
        assert isinstance(edited, str)
    return best


def test_a_megabyte_diff_is_applied_in_time_linear_in_its_size() -> None:
    small, large = diff(2_000), diff(20_000)
    assert 800_000 < len(large) < MAX_DIFF_CHARS and large.count("@@ -") <= MAX_HUNKS
    edited = apply_diff(source(20_000), large)
    assert isinstance(edited, str) and "value_19981_13 = 13" in edited and "    value_19981 = 19981\n" not in edited
    ratio = seconds(source(20_000), large) / seconds(source(2_000), small)
    assert ratio < 30, f"ten times the diff took {ratio:.0f} times as long"  # a quadratic patcher: about 100


def test_hunks_anchored_on_one_line_are_refused_at_once() -> None:
    anchored = "".join("@@\n     value_0 = 0\n+# again\n" for _ in range(MAX_HUNKS))  # each finds the first line
    started = time.perf_counter()
    refused = apply_diff(source(5_000), anchored)
    assert isinstance(refused, EditRefused) and "change the same lines" in refused.reason
    assert time.perf_counter() - started < 2.0  # a patcher that searched its own output from the top: 10 s and more


def test_a_diff_past_the_bounds_is_refused_unread() -> None:
    too_long = apply_diff(source(10), "@@\n" + "+x\n" * (MAX_DIFF_CHARS // 3 + 1))
    too_many = apply_diff(source(10), "@@\n     value_0 = 0\n" * (MAX_HUNKS + 1))
    assert isinstance(too_long, EditRefused) and too_long.kind == MALFORMED and "characters" in too_long.reason
    assert isinstance(too_many, EditRefused) and too_many.kind == MALFORMED and "hunks" in too_many.reason


def test_unclosed_fences_are_read_in_one_pass() -> None:
    fences = "```a" * 50_000  # fences and no newline: a regex retried the rest of the reply from each one (seconds)
    started = time.perf_counter()
    refused = apply_reply(source(10), fences)
    assert isinstance(refused, EditRefused) and time.perf_counter() - started < 0.5
