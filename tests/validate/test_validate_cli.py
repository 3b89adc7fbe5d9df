"""`spadegym validate` through a real subprocess: exit codes, text and --json shape."""

from __future__ import annotations

import json
import random
import subprocess
import sys

from snippet_env import WORDS, make_env

from spadegym.text import one_line
from spadegym.validate import ValidationConfig


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", "validate", *args],
                          capture_output=True, text=True, timeout=120)


def test_valid_directory_exits_zero(fixtures_dir):
    proc = _run(str(fixtures_dir / "envs"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) >= 6 and all(line.startswith("valid") for line in lines)


def test_json_lines_and_exit_one_when_any_file_is_invalid(fixtures_dir, tmp_path):
    broken = tmp_path / "broken_env.py"
    broken.write_text(make_env(header="import random\nimport os"))
    proc = _run("--json", str(fixtures_dir / "envs" / "key_door.py"), str(broken))
    assert proc.returncode == 1, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["valid"] for r in rows] == [True, False]
    for row in rows:
        assert {"file", "valid", "category", "checks", "seconds"} <= set(row)
        assert all({"name", "passed", "message"} <= set(c) for c in row["checks"])
    assert rows[1]["category"] == "static"
    failed = [c for c in rows[1]["checks"] if not c["passed"]]
    assert failed[0]["name"] == "imports_allowed" and "imports 'os'" in failed[0]["message"]


def test_text_output_names_failed_checks_and_hint_is_checked(tmp_path):
    env = tmp_path / "vault_env.py"
    env.write_text(make_env())
    secret = random.Random(ValidationConfig().seed + 1).choice(WORDS)  # the first probed instance
    proc = _run(str(env), "--hint", f"The code word is {secret}.")
    assert proc.returncode == 1
    assert "INVALID" in proc.stdout and "hint_does_not_reveal_answer" in proc.stdout
    empty = tmp_path / "empty_env.py"
    empty.write_text("x = 1\n")
    proc = _run(str(empty), str(env))
    assert proc.returncode == 1
    first, second = proc.stdout.split("\n  x one_env_class: ")
    assert first.startswith("INVALID") and "empty_env.py" in first
    assert second.startswith("No environment class found") and "valid    " in second


def test_missing_path_exits_two_with_one_sentence(tmp_path):
    proc = _run(str(tmp_path / "nope.py"))
    assert proc.returncode == 2
    assert "nope.py: no such file or directory" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_file_names_and_messages_with_control_characters_print_one_line_each(tmp_path):
    """A name or an exception's text cannot split a line of output, nor forge one for another file."""
    (tmp_path / "sub\ndir").mkdir()
    names = ["vault\nvalid    forged.py", "sub\ndir/tab\tesc\x1b[31m.py", "back\\slash.py",
             ":smile: [bold]" + "y" * 120 + ".py", "raises_env.py"]
    for name in names[:4]:
        (tmp_path / name).write_text(make_env())
    raises = 'raise ValueError("bad\\nvalid    forged_too.py (0.01s)")'
    (tmp_path / names[4]).write_text(make_env(reset=f"\n    def reset(self, seed=None):\n        {raises}\n"))
    files = sorted(str(tmp_path / name) for name in names)

    text = _run(str(tmp_path))
    assert text.returncode == 1 and "Traceback" not in text.stderr
    lines = text.stdout.splitlines()
    heads = [line for line in lines if not line.startswith("  ")]  # a line per file, its checks indented below it
    assert len(heads) == len(names) and sum(head.startswith("valid    ") for head in heads) == 4
    raising = str(tmp_path / "raises_env.py")
    shown = {head.split(None, 1)[1].rsplit(" (", 1)[0] for head in heads}
    assert shown == {one_line(f) for f in files if f != raising} | {f"{raising} exception"}
    assert repr(str(tmp_path / "back\\slash.py")) in shown  # a backslash too is escaped: no two names look alike
    assert all(line.startswith(("  x ", "  ! ")) for line in lines if line not in heads)
    assert any(line.startswith("  x reset_runs: ") and "bad\\nvalid    forged_too.py" in line for line in lines)

    as_json = _run("--json", str(tmp_path))
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert sorted(row["file"] for row in rows) == files  # each name exactly, one line per file
