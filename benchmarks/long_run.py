"""Cost as work grows: a run of many rounds with a cheap agent, its per-round time, memory and store growth.

A round's work is the same at round 10 and at round 1,000 (the same number of
proposals, validations and plays), so whatever costs more later grows with the
rounds already played: the level buffer, the diversity score, the reward-hacking
watch, the store's writes. Printed at rounds 10, 100 and the last (by default
1,000): the seconds of a round (the mean of the ten rounds up to it, wall and
the CPU of this process and its sandbox, the run's first round, which starts
its parts, and its last, which holds its only held-out evaluation, left out),
this process's resident memory, the store's size and its growth per round since
the mark before; then the time the report of the whole run takes to build.

    python benchmarks/long_run.py [--rounds 1000] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the command line runs (spadegym.cli)

from spadegym.loop.callbacks import RunCallback  # noqa: E402
from spadegym.loop.config import RunConfig  # noqa: E402
from spadegym.loop.run import run  # noqa: E402
from spadegym.store.record import RoundSummary  # noqa: E402

#: A round as small as the loop allows while every part still works: the mutation designer proposes and the
#: gate validates, the random agent plays hinted and plain groups, the buffer replays, the watch probes.
CHEAP = {
    "agent": "random",
    "envs_per_round": 4,
    "plays": 4,
    "hint_plays": 4,
    "group_size": 4,
    # Evaluated at the last round only, which the figures leave out: two families suffice.
    "heldout": {"every": 0, "levels": "easiest", "seeds": 1, "families": ["button_lock", "grid_maze"]},
}
#: The rounds whose figures are printed as the run reaches them (and the last).
MARKS = (10, 100, 250, 500, 750, 1000)
#: Rounds averaged for each figure (the ten up to the named round).
WINDOW = 10


def tree_cpu_s() -> float:
    """CPU seconds of this process and every live descendant (the sandbox's zygote, with the workers it reaped)."""
    own = os.times()
    total, tick = own.user + own.system + own.children_user + own.children_system, os.sysconf("SC_CLK_TCK")
    pending = [str(os.getpid())]
    while pending:
        pid = pending.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in children:
                try:
                    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                total += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
                pending.append(child)
    return total


def store_mb(store: Path) -> float:
    """The store's size on disk, its write-ahead log included."""
    return sum(p.stat().st_size for p in store.parent.glob(store.name + "*") if p.is_file()) / 2**20


def rss_mb() -> float:
    """This process's resident memory now (not its peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Meter(RunCallback):
    """Per committed round: wall and CPU seconds since the last one (this process and its sandbox), RSS, store size."""

    def __init__(self, store: Path, rounds: int):
        self.store, self.rounds = store, rounds
        self.rows: list[dict[str, float]] = []
        self.last_wall, self.last_cpu = time.perf_counter(), tree_cpu_s()

    def on_round(self, summary: RoundSummary) -> None:
        wall, cpu = time.perf_counter(), tree_cpu_s()
        self.rows.append(
            {
                "wall_s": wall - self.last_wall,
                "cpu_s": cpu - self.last_cpu,
                "rss_mb": rss_mb(),
                "store_mb": store_mb(self.store),
            }
        )
        if len(self.rows) in MARKS:  # a long run shows its figures as it goes
            print(
                json.dumps({"round": len(self.rows), **self.at(len(self.rows))}), file=sys.stderr, flush=True
            )
        self.last_wall, self.last_cpu = time.perf_counter(), tree_cpu_s()

    def at(self, n: int) -> dict[str, float]:
        """The figures at round ``n`` (1-based): means over the window up to it (the run's first and last rounds
        left out), RSS and store size at it."""
        window = [self.rows[i] for i in range(max(0, n - WINDOW), n) if 0 < i < self.rounds - 1] or self.rows[
            :n
        ]
        # The store's growth since the previous mark (a write-ahead log grows and is folded back in steps).
        since = max([m for m in MARKS if m < n], default=0)
        before = self.rows[since - 1]["store_mb"] if since else 0.0
        return {
            "seconds_per_round": round(sum(r["wall_s"] for r in window) / len(window), 4),
            "cpu_s_per_round": round(sum(r["cpu_s"] for r in window) / len(window), 4),
            "rss_mb": round(self.rows[n - 1]["rss_mb"], 1),
            "store_mb": round(self.rows[n - 1]["store_mb"], 2),
            "store_kb_per_round": round(1024 * (self.rows[n - 1]["store_mb"] - before) / (n - since), 1),
        }


def long_run(rounds: int, seed: int, out: Path, report: bool = True) -> dict[str, Any]:
    """Run ``rounds`` cheap rounds into ``out``; the figures at rounds 10, 100 and ``rounds`` (those reached), and
    with ``report`` the seconds the report of the whole run takes to build."""
    config = RunConfig.model_validate({**CHEAP, "rounds": rounds, "seed": seed, "tensorboard": False})
    meter = Meter(out / "run.sqlite", rounds)
    start = time.perf_counter()
    run(config, out, callbacks=[meter], report=False)
    seconds = time.perf_counter() - start
    report_s = None
    if report:
        from spadegym.report import write_report

        t0 = time.perf_counter()
        write_report(out)
        report_s = round(time.perf_counter() - t0, 2)
    marks = sorted({n for n in (10, 100, rounds) if n <= rounds})
    by_round = {str(n): meter.at(n) for n in marks}
    first, last = by_round[str(marks[0])], by_round[str(marks[-1])]
    return {
        "rounds": rounds,
        "seconds": round(seconds, 1),
        "by_round": by_round,
        "seconds_per_round": {n: f["seconds_per_round"] for n, f in by_round.items()},
        "rss_mb": {n: f["rss_mb"] for n, f in by_round.items()},
        "store_mb": last["store_mb"],
        f"time_ratio_{marks[-1]}_vs_{marks[0]}": round(
            last["seconds_per_round"] / first["seconds_per_round"], 2
        ),
        f"cpu_ratio_{marks[-1]}_vs_{marks[0]}": round(last["cpu_s_per_round"] / first["cpu_s_per_round"], 2),
        "report_s": report_s,
        "load_average_1min": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=None, help="Keep the run here (default: a temporary folder)."
    )
    parser.add_argument("--json", action="store_true", help="One JSON line.")
    args = parser.parse_args()
    if args.out is not None:
        figures = long_run(args.rounds, args.seed, args.out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            figures = long_run(args.rounds, args.seed, Path(tmp) / "run")
    print(json.dumps(figures, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
