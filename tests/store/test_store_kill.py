"""A writer killed with SIGKILL mid-round leaves a consistent store with only complete rounds."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from spadegym.store import DB_NAME, RunStore

EPISODES_PER_ROUND = 300

WRITER = textwrap.dedent(
    """
    import sys, time
    from spadegym.level import Level
    from spadegym.store import RunStore
    run_dir, mode = sys.argv[1], sys.argv[2]
    store = RunStore.create(run_dir, config={}, versions={})
    def episodes(n):
        return [
            {"env_id": f"e{i % 7}", "seed": i, "hinted": bool(i % 2), "ret": 1.0, "split": "train",
             "turns": [{"observation": "x" * 200, "reply": "\\\\boxed{1}", "action": "1"}]}
            for i in range(PER_ROUND)
        ]
    n = 0
    while True:
        n += 1
        with store.round(n) as tx:
            tx.add_environment(f"env{n}", Level("src"))
            tx.add_episodes(episodes(n)[:150])
            tx.save_state("buffer", {"round": n})
            if mode == "pause" and n == 2:
                print("mid", flush=True)  # the round is half written: wait to be killed
                time.sleep(60)
            tx.add_episodes(episodes(n)[150:])
            tx.add_scores([{"env_id": f"env{n}", "win_rate": 0.5}])
            tx.finish({"round_marker": n})
        print("done", n, flush=True)
    """
).replace("PER_ROUND", str(EPISODES_PER_ROUND))


def _start(tmp_path, mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "run"), mode],
        stdout=subprocess.PIPE,
        text=True,
    )


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def _check_consistent(run_dir) -> int:
    db = sqlite3.connect(run_dir / DB_NAME)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    db.close()
    store = RunStore.open(run_dir)
    last = store.last_complete_round()
    assert last is not None and [r["round"] for r in store.rounds()] == list(range(1, last + 1))
    for n in range(1, last + 1):
        assert store.episode_count(round=n) == EPISODES_PER_ROUND
        assert len(store.scores(round=n)) == 1
    assert store.episode_count() == EPISODES_PER_ROUND * last  # nothing from the killed round
    assert [e["round"] for e in store.environments()] == list(range(1, last + 1))
    assert store.load_state("buffer") == {"round": last}
    store.close()
    return last


def test_kill_in_the_middle_of_a_round_loses_only_that_round(tmp_path):
    proc = _start(tmp_path, "pause")
    assert proc.stdout.readline().split() == ["done", "1"]
    assert proc.stdout.readline().strip() == "mid"
    _kill(proc)
    assert _check_consistent(tmp_path / "run") == 1
    # The run continues where it stopped.
    store = RunStore.open(tmp_path / "run")
    with store.round(2) as tx:
        tx.add_episodes([{"env_id": "e", "ret": 0.0, "split": "train"}])
        tx.finish({"resumed": True})
    assert store.rounds()[-1] == {"resumed": True, "round": 2}


def test_kill_at_an_arbitrary_moment_of_a_busy_writer_keeps_the_store_consistent(tmp_path):
    proc = _start(tmp_path, "busy")
    for _ in range(3):
        assert proc.stdout.readline().startswith("done")
    time.sleep(0.05)  # somewhere inside a later round, or inside its commit
    _kill(proc)
    assert _check_consistent(tmp_path / "run") >= 3
