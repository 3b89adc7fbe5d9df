"""The validation gate over every built-in family at every level and many seeds.

Seed ``s`` renders the level as ``spadegym new FAMILY --level L --seed s`` does
(variant ``s % 8``) and runs the gate with ``validation.seed = s`` (its probe
instances and random-policy choices), so 64 seeds cover every variant under
eight different probe draws. Prints each failing (family, level, seed) with
the gate's message, then how many verdicts were valid.

    python benchmarks/family_soundness.py [--seeds 64] [--jobs 4] [FAMILY ...]
"""

from __future__ import annotations

import argparse
import random
import time
from concurrent.futures import ThreadPoolExecutor

from spadegym.families import edit_space, get_family, list_families
from spadegym.families.registry import new_environment
from spadegym.families.variation import held_out_variation
from spadegym.sandbox import Sandbox
from spadegym.validate import validate_source
from spadegym.validate.config import ValidationConfig


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="*")
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=4, help="files probed at once on the one sandbox")
    parser.add_argument("--levels", choices=("listed", "extended", "edge", "varied"), default="listed")
    args = parser.parse_args()
    fams = [get_family(n) for n in args.families] or list_families()
    levels = {f.name: {"listed": range(f.max_level + 1), "edge": range(f.max_level + 1),
                       "extended": range(f.max_level + 1, f.max_extended_level + 1),
                       "varied": range(f.max_extended_level + 1)}[args.levels] for f in fams}
    cases = [(f.name, level, seed) for f in fams for level in levels[f.name] for seed in range(args.seeds)]

    def render(name: str, level: int, seed: int) -> str:
        family, knobs, source = new_environment(name, level, seed=seed)
        if args.levels == "edge":
            return family.render({**knobs, **held_out_variation()})
        if args.levels == "varied":
            variation = edit_space(family).random_variation(random.Random(f"{name}:{level}:{seed}"), held_out=True)
            return family.render({**knobs, **variation})
        return source
    start = time.perf_counter()
    with Sandbox() as box, ThreadPoolExecutor(max_workers=args.jobs) as pool:

        def check(case: tuple[str, int, int]):
            name, level, seed = case
            source = render(name, level, seed)
            return case, validate_source(source, f"{name}.py", sandbox=box, config=ValidationConfig(seed=seed))

        bad, done = 0, {f.name: 0 for f in fams}
        for (name, level, seed), verdict in pool.map(check, cases):
            done[name] += 1
            if not verdict.valid:
                bad += 1
                print(f"{name} level {level} seed {seed}: {verdict.failed[0].name}: {verdict.failed[0].message}",
                      flush=True)
            if done[name] == len(levels[name]) * args.seeds:
                print(f"{name}: {args.levels} levels at seeds 0-{args.seeds - 1} done "
                      f"({time.perf_counter() - start:.0f} s so far)", flush=True)
    seconds = time.perf_counter() - start
    print(f"valid {len(cases) - bad}/{len(cases)} verdicts ({len(fams)} families, {args.levels} levels, "
          f"seeds 0-{args.seeds - 1}); "
          f"{seconds:.0f} s, {len(cases) / seconds:.1f} verdicts/s")


if __name__ == "__main__":
    main()
