"""Success rates of every built-in family by level: solution, random play, hint-following play.

    python benchmarks/family_calibration.py [--episodes 100] [FAMILY ...]
"""

from __future__ import annotations

import argparse
import time

from spadegym.families import get_family, list_families
from spadegym.families.calibrate import play
from spadegym.sandbox import Sandbox


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="*")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--levels", default="all")
    args = parser.parse_args()
    fams = [get_family(n) for n in args.families] or list_families()
    seeds = list(range(args.episodes))
    with Sandbox() as sandbox:
        for fam in fams:
            levels = range(fam.max_level + 1) if args.levels == "all" else [int(x) for x in args.levels.split(",")]
            for level in levels:
                t0 = time.perf_counter()
                src = fam.render(fam.level_knobs(level))
                sol = play(sandbox, src, seeds[:20], "solution")
                rnd = play(sandbox, src, seeds, "random")
                hin = play(sandbox, src, seeds, "hint")
                fails = sol.failures + rnd.failures + hin.failures
                print(f"{fam.name:16s} L{level}  solution {sol.win_rate:4.2f}  random {rnd.win_rate:4.2f}  "
                      f"hint {hin.win_rate:4.2f}  ({time.perf_counter() - t0:4.1f}s)"
                      + (f"  FAIL {fails[0]}" if fails else ""), flush=True)


if __name__ == "__main__":
    main()
