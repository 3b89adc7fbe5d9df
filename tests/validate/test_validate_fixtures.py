"""The shared fixture environments pass the gate; paths expand as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from spadegym.envfile import SourceError
from spadegym.validate import ValidationConfig, Verdict, expand_paths, validate_paths


def test_every_fixture_env_is_valid(sandbox, fixtures_dir):
    verdicts = list(validate_paths([fixtures_dir / "envs"], sandbox=sandbox))
    assert len(verdicts) >= 6
    for verdict in verdicts:
        assert verdict.valid, f"{verdict.file}: {verdict.feedback()}"
        assert not verdict.warnings, f"{verdict.file}: {verdict.feedback()}"
        names = {c.name for c in verdict.checks}
        # Every fixture offers solution(), valid_actions() and a hint, so every section ran.
        assert {"solution_wins", "valid_actions_nonempty", "hint_does_not_reveal_answer",
                "random_policy_loses", "deterministic"} <= names


def test_directories_expand_to_sorted_python_files(fixtures_dir, tmp_path):
    (tmp_path / "b_env.py").write_text("x = 1\n")
    (tmp_path / "a_env.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not an environment\n")
    single = fixtures_dir / "envs" / "key_door.py"
    files = expand_paths([tmp_path, single])
    assert [f.name for f in files] == ["a_env.py", "b_env.py", "key_door.py"]


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(SourceError, match="no such file or directory"):
        list(validate_paths([tmp_path / "missing.py"]))


def test_unreadable_file_gives_an_invalid_verdict(sandbox, tmp_path):
    bad = tmp_path / "latin1_env.py"
    bad.write_bytes(b"# caf\xe9\n")
    (verdict,) = validate_paths([bad], sandbox=sandbox)
    assert isinstance(verdict, Verdict)
    assert not verdict.valid and verdict.category == "static"
    assert "not UTF-8" in verdict.failed[0].message


def test_verdicts_come_back_in_file_order_with_parallel_jobs(sandbox, fixtures_dir, tmp_path):
    names = sorted(p.name for p in (fixtures_dir / "envs").glob("*.py"))
    for i, name in enumerate(names):
        (tmp_path / f"{i:02d}_{name}").write_text((fixtures_dir / "envs" / name).read_text())
    (tmp_path / "03_broken.py").write_text("class BrokenEnv:\n    pass\n")
    verdicts = list(validate_paths([tmp_path], sandbox=sandbox, config=ValidationConfig(jobs=3)))
    assert [Path(v.file).name for v in verdicts] == sorted(p.name for p in tmp_path.glob("*.py"))
    assert [v.valid for v in verdicts].count(False) == 1
    assert next(v for v in verdicts if v.file.endswith("03_broken.py")).failed[0].name == "defines_reset"
