"""A run with a local model says what a round will cost before it starts, shows its progress while the model
generates, and a SIGTERM ends it cleanly with one line saying what was lost and why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

SMALL = ["--rounds", "1", "--set", "envs_per_round=4", "--set", "plays=4", "--set", "hint_plays=0",
         "--set", "group_size=4", "--set", "skills_per_round=1", "--set", "heldout.every=0",
         "--set", "heldout.levels=easiest", "--set", "heldout.seeds=1", "--set", 'heldout.families=["take_away"]',
         "--set", "tensorboard=false", "--set", "train.threads=1", "--no-report"]


def start_run(model_dir, out):
    env = {**os.environ, "SPADEGYM_PROGRESS_EVERY": "0.2", "PYTHONUNBUFFERED": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.Popen([sys.executable, "-m", "spadegym", "run", "--agent", f"hf:{model_dir}", "--out", str(out),
                             *SMALL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def read_until(proc, prefix: str, has: str = "", timeout: float = 120) -> list[str]:
    """The lines the run printed up to and including the first that starts with ``prefix`` and holds ``has``."""
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(prefix) and has in line:
            return lines
    proc.kill()
    raise AssertionError(f"no line starting {prefix!r}: {lines[-20:]} {proc.stderr.read()[-2000:]}")


def test_sigterm_while_the_model_generates_ends_with_one_line_saying_what_was_lost(tiny_dir, tmp_path):
    out = tmp_path / "run"
    proc = start_run(tiny_dir, out)
    try:
        before = read_until(proc, "round 0 play: 0/16 episodes, ", has=" tokens (")  # before any episode ends
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    said = "\n".join(before) + stdout + stderr
    # What a round costs is said before it starts; progress shows the tokens the model writes as it writes them.
    costs = [line for line in before if line.startswith("round cost (an estimate, at ")]
    assert len(costs) == 1 and "16 episodes (4 levels x 4 plays) of up to 64 tokens a turn" in costs[0], before
    assert before.index(costs[0]) < min(i for i, line in enumerate(before) if line.startswith("round 0 "))
    assert proc.returncode == 143, said[-2000:]
    notices = [line for line in said.splitlines() if line.startswith(("terminated", "interrupted"))]
    assert len(notices) == 1, said[-2000:]
    assert notices[0].startswith("terminated (SIGTERM) before the first round finished (round 0 play: ")
    assert "a round is kept only when it is complete, so nothing of the run is kept" in notices[0]
    assert "Task exception was never retrieved" not in said and "Traceback" not in said, said[-3000:]
    assert not out.exists()  # a run with no complete round leaves nothing behind
