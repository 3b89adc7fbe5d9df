"""A seeded run is the same in every process: nothing depends on Python's salted string hash."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

TINY = ["--set", "envs_per_round=4", "--set", "plays=4", "--set", "hint_plays=4", "--set", "group_size=4",
        "--set", "heldout.levels=ends", "--set", "heldout.seeds=1", "--set", "heldout.every=0"]
WALL_CLOCK = {"seconds", "elapsed_s", "timings", "finished_at"}  # the only fields that may differ
TABLES = ("rounds", "environments", "proposals", "episodes", "scores", "state")


def _without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in WALL_CLOCK}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):  # an episode: zlib-compressed JSON
        value = zlib.decompress(value).decode()
    if isinstance(value, str) and value[:1] in "{[":
        return _without_clock(json.loads(value))
    return value


def store_content(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row a run wrote, JSON decoded, without the wall-clock fields."""
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        content = {}
        for table in TABLES:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            rows = db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            content[table] = [_without_clock({c: _cell(v) for c, v in zip(columns, row)}) for row in rows]
    return content


def test_a_seeded_run_is_identical_under_different_hash_seeds(tmp_path):
    runs = {}
    for hash_seed in ("1", "2"):
        out = tmp_path / f"hash-{hash_seed}"
        runs[out] = subprocess.Popen(
            [sys.executable, "-m", "spadegym", "run", "--out", str(out), "--rounds", "2", "--seed", "4",
             "--no-report", *TINY], env={**os.environ, "PYTHONHASHSEED": hash_seed},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for proc in runs.values():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    first, second = (store_content(out) for out in runs)
    assert first["episodes"] and first["rounds"][-1]["summary"]["learner"]  # the learner trained
    for table in TABLES:
        assert first[table] == second[table], f"the {table} table differs between hash seeds 1 and 2"
