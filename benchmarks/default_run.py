"""The default run (`spadegym run`, no arguments) timed: wall and CPU, per phase, and its figures.

Runs the real command in a child process, so the CPU time of the whole process
tree (the loop, the sandbox's zygote and every worker) is counted, and prints
the figures the README reports: held-out success without and with the hint
(first and last evaluation), the mean share of played levels in the learnable
band, and the seconds per phase. On a shared machine wall time follows the
load: the CPU seconds are the figure that carries over, and the load average
is printed beside them.

    python benchmarks/default_run.py [--rounds 36] [--seed 0] [--set mutation.vary_fresh=false] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def figures(run_dir: Path) -> dict:
    """What the README's results line reports, read from the run's store."""
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        rounds = [json.loads(s) for (s,) in db.execute("SELECT summary FROM rounds ORDER BY round")]
    evaluated = [r for r in rounds if r.get("heldout_success") is not None]
    phases: dict[str, float] = {}
    for r in rounds:
        for phase, seconds in (r.get("timings") or {}).items():
            phases[phase] = round(phases.get(phase, 0.0) + seconds, 1)
    bands = [r["band_fraction"] for r in rounds if r.get("band_fraction") is not None]
    return {
        "rounds": len(rounds), "episodes": sum(r["episodes"] for r in rounds),
        "heldout_first": round(evaluated[0]["heldout_success"], 4) if evaluated else None,
        "heldout_last": round(evaluated[-1]["heldout_success"], 4) if evaluated else None,
        "heldout_hint_last": round(evaluated[-1].get("heldout_success_hint") or 0.0, 4) if evaluated else None,
        "band_mean": round(sum(bands) / len(bands), 4) if bands else None,
        "seconds_in_rounds": round(sum(r["seconds"] for r in rounds), 1), "phases": phases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="Rounds (default: the embedded default's).")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A setting of the run (repeatable), as `spadegym run --set` takes it.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "spadegym", "run", "--out", str(out), "--no-report"]
        cmd += ["--rounds", str(args.rounds)] if args.rounds else []
        cmd += ["--seed", str(args.seed)] if args.seed is not None else []
        cmd += [arg for setting in args.set for arg in ("--set", setting)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run, its zygote and workers (all reaped)
        report = {"wall_s": round(wall, 1),
                  "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
                  "load_average_1min": round(os.getloadavg()[0], 1), **figures(out)}
    print(json.dumps(report, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
