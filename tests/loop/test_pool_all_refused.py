"""A pool whose files the gate all refuses: the run names them and stops, instead of playing nothing (issue 62.5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

NO_STEP = "class Env{i}Env:\n    def reset(self, seed=None):\n        return 'hi', {{}}\n"


def test_a_pool_of_refused_files_names_them_and_stops_with_an_error(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a_broken.py").write_text("def (:\n")
    for i in range(6):
        (pool / f"b_{i}.py").write_text(NO_STEP.format(i=i))
    # Four files a round: round 0 refuses four and plays nothing, round 1 refuses the last three and stops.
    done = subprocess.run([sys.executable, "-m", "spadegym", "run", "--pool", str(pool), "--rounds", "5",
                           "--out", str(tmp_path / "run"), "--no-report", "--set", "envs_per_round=4",
                           "--set", "tensorboard=false", "--set", "heldout.every=0"],
                          capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "round   1" not in done.stdout  # it stopped in the round that ran out of files, before playing it
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[0].startswith(f"error: the gate refused all 7 files of the pool {pool}, so the run has nothing to play")
    assert lines[1] == f"  {pool / 'a_broken.py'}: parses: " + lines[1].split(": parses: ")[1]
    assert all("defines_step" in line for line in lines[2:6])
    assert lines[6:] == ["  and 2 more"]  # one line a file, the first five, then a count
