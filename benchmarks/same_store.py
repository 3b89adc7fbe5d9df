"""Does a change keep what runs write? Seeded short runs of two source trees, their stores compared row by row.

    python benchmarks/same_store.py dump --tree . --out after.json       # this checkout
    python benchmarks/same_store.py dump --tree ../base --out before.json
    python benchmarks/same_store.py compare before.json after.json

``dump`` runs each scenario below with ``PYTHONPATH`` set to the tree (so the
tree's own ``spadegym`` runs) and writes every row of every table of each run
store, JSON decoded, with only the wall-clock fields left out. ``compare``
prints, per scenario and table, the rows that differ (none: the same store).
The scenarios cover the default loop (mutation designer, learner, held-out
suite), a run with a pool and a reasoning-gym source beside the designer, a
fixed-pool baseline, and a red-team search (its store and its suite's manifest).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

#: Fields that hold times: the only ones that may differ between two runs of one seed.
WALL_CLOCK = {"seconds", "elapsed_s", "timings", "finished_at", "created_at", "created", "proposals_per_second"}
TINY = ["--set", "envs_per_round=4", "--set", "plays=4", "--set", "hint_plays=4", "--set", "group_size=4",
        "--set", "heldout.levels=ends", "--set", "heldout.seeds=1", "--set", "heldout.every=2"]
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "envs"

SCENARIOS: dict[str, list[str]] = {
    "default": ["run", "--seed", "4", "--rounds", "3", *TINY],
    "sources": ["run", "--seed", "5", "--rounds", "3", "--agent", "random", "--source", "reasoning-gym:chain_sum",
                "--source", "pool", *TINY],  # pool: the fixture environments, copied beside the runs
    "fixed": ["run", "--seed", "6", "--rounds", "2", "--designer", "fixed:easy", *TINY],
    "redteam": ["redteam", "--target", "learner", "--budget", "8", "--per-round", "4", "--seed", "3",
                "--families", "key_rooms,take_away", "--set", "plays=2", "--set", "confirm_seeds=2",
                "--set", "confirm_plays=1"],
}


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
        try:
            return _without_clock(json.loads(value))
        except ValueError:
            return value
    return value


def store_rows(db_path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, JSON decoded, without the wall-clock fields (rows in the order of their key)."""
    with sqlite3.connect(db_path) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        content = {}
        for table in tables:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            rows = db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            content[table] = [{c: _cell(v) for c, v in zip(columns, row) if c not in WALL_CLOCK} for row in rows
                              if row[0] not in WALL_CLOCK]  # a key-value table's time rows (meta's created_at)
    return content


def dump(tree: Path, out: Path, only: list[str] | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "PYTHONHASHSEED": "0"}
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(FIXTURES, Path(tmp) / "pool")  # a relative path: the same in every tree's runs
        for name, args in SCENARIOS.items():
            if only and name not in only:
                continue
            run_dir = Path(tmp) / name
            command = [sys.executable, "-m", "spadegym", *args, "--out", str(run_dir)]
            if args[0] == "run":
                command.append("--no-report")
            done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
            store = run_dir / ("hunt" if args[0] == "redteam" else "") / "run.sqlite"
            result[name] = store_rows(store)
            if args[0] == "redteam":
                manifest = json.loads((run_dir / "manifest.json").read_text())
                result[name]["suite manifest"] = [_without_clock(manifest)]
            print(f"{name}: " + ", ".join(f"{t} {len(r)}" for t, r in result[name].items()), flush=True)
    out.write_text(json.dumps(result, sort_keys=True))


def compare(before: Path, after: Path) -> int:
    """Rows compared on the columns both stores have; a column only one has is named with the values it holds."""
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differing = 0
    for scenario in sorted(set(a) | set(b)):
        for table in sorted(set(a.get(scenario, {})) | set(b.get(scenario, {}))):
            rows_a, rows_b = a.get(scenario, {}).get(table), b.get(scenario, {}).get(table)
            if rows_a is None or rows_b is None:
                differing += 1
                print(f"DIFFERENT  {scenario}.{table}: only in {'after' if rows_a is None else 'before'}")
                continue
            columns_a = set().union(*map(set, rows_a)) if rows_a else set()
            columns_b = set().union(*map(set, rows_b)) if rows_b else set()
            shared = columns_a & columns_b
            extra = [f"{c} (only {'after' if c in columns_b else 'before'}: "
                     f"{sorted({json.dumps(r.get(c)) for r in (rows_b if c in columns_b else rows_a)})})"
                     for c in sorted(columns_a ^ columns_b)]
            changed = [i for i, (x, y) in enumerate(zip(rows_a, rows_b))
                       if {k: v for k, v in x.items() if k in shared} != {k: v for k, v in y.items() if k in shared}]
            note = f"; new or dropped columns: {', '.join(extra)}" if extra else ""
            if len(rows_a) == len(rows_b) and not changed:
                print(f"same       {scenario}.{table}: {len(rows_a)} rows{note}")
                continue
            differing += 1
            print(f"DIFFERENT  {scenario}.{table}: {len(rows_a)} rows before, {len(rows_b)} after, "
                  f"{len(changed)} of the common rows differ{note}")
            for i in changed[:3]:
                keys = sorted(k for k in shared if rows_a[i].get(k) != rows_b[i].get(k))
                for key in keys[:4]:
                    print(f"    row {i} {key}: {str(rows_a[i].get(key))[:160]!r} -> {str(rows_b[i].get(key))[:160]!r}")
    print("the same store, row for row" if not differing else f"{differing} tables differ")
    return 1 if differing else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("dump", help="run the scenarios with a tree's spadegym and write their stores")
    run.add_argument("--tree", type=Path, default=Path("."), help="the source tree whose spadegym runs")
    run.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    run.add_argument("--scenario", action="append", choices=list(SCENARIOS), help="only these (repeatable)")
    diff = commands.add_parser("compare", help="compare two dumps table by table")
    diff.add_argument("before", type=Path)
    diff.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.tree, args.out, args.scenario)
    else:
        raise SystemExit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
