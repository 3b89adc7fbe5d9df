"""`spadegym validate` through a real subprocess: exit codes, text and --json shape."""

from __future__ import annotations

import json
import random
import subprocess
import sys

from snippet_env import WORDS, make_env

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
