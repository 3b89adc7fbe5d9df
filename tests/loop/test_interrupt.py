"""Ctrl-C in `spadegym run`: one notice of what was kept, the completed rounds' report, exit status 130."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

TINY = ["--set", "envs_per_round=4", "--set", "plays=4", "--set", "hint_plays=4", "--set", "group_size=4",
        "--set", "heldout.levels=ends", "--set", "heldout.seeds=1", "--set", "heldout.every=0",
        "--set", 'heldout.suites=["in_distribution"]']


def rounds_done(db) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM rounds").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_ctrl_c_says_interrupted_once_and_writes_the_report_of_the_completed_rounds(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "spadegym", "run", "--out", str(out), "--rounds", "40", *TINY],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and rounds_done(out / "run.sqlite") < 1:
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    said = stdout + stderr
    assert [line for line in said.splitlines() if line.startswith("interrupted")] == [
        f"interrupted; completed rounds are saved. Resume with: spadegym run --resume {out}"], said[-2000:]
    assert "Traceback" not in said
    assert (out / "report.html").is_file() and f"Report: {out / 'report.html'}" in said
