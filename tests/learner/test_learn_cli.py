"""`spadegym learn` through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spadegym.agents.learner import make_learner

ENVS = Path(__file__).parent / "envs"


def run_learn(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", "learn", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_json_curve_and_checkpoint(tmp_path):
    out = tmp_path / "ckpt"
    proc = run_learn(str(ENVS / "lights.py"), str(ENVS / "arithmetic.py"), "--episodes", "128", "--eval-every", "64",
                     "--eval-seeds", "4", "--group-size", "4", "--seed", "1", "--out", str(out), "--json",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    points = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [p["episodes"] for p in points] == [0, 64, 128]
    for point in points:
        assert set(point) == {"episodes", "seconds", "envs"}
        assert set(point["envs"]) == {"lights", "arithmetic"}
        assert all(set(r) == {"success", "success_hint", "return", "return_hint"} for r in point["envs"].values())
    assert (out / "learner.json").is_file() and (out / "weights.npz").is_file()
    assert make_learner(str(out)).scorer.step > 0


def test_environment_without_listed_actions_is_refused_in_one_sentence(tmp_path):
    proc = run_learn(str(ENVS / "textonly.py"), "--episodes", "16", cwd=tmp_path)
    assert proc.returncode == 2
    assert "the learner picks among listed actions" in proc.stderr and "textonly.py" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "learner-checkpoint").exists()


def test_a_pool_folder_is_searched_recursively_and_unplayable_files_are_skipped(tmp_path):
    pool = tmp_path / "pool" / "games" / "gen_0001"
    pool.mkdir(parents=True)
    for name in ("arithmetic.py", "textonly.py"):
        (pool / name).write_text((ENVS / name).read_text())
    proc = run_learn(str(tmp_path / "pool"), "--episodes", "16", "--eval-seeds", "2", "--group-size", "4",
                     "--json", "--out", str(tmp_path / "ckpt"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1 files that list no actions: textonly.py" in proc.stderr
    assert set(json.loads(proc.stdout.splitlines()[-1])["envs"]) == {"arithmetic"}
