"""Can the built-in CPU learner learn the easy family levels, and do the hints help?

Trains one fresh learner on one family per skill at level 0 (half the plays in
the hint arm) and prints success without / with the hint before and after.

    python benchmarks/family_learnability.py [--episodes 3000] [--level 0] [--set hint_prior=0] [FAMILY ...]
"""

from __future__ import annotations

import argparse
import json
import time

from curriculum import parse_sets

from spadegym.agents.learner.agent import make_learner
from spadegym.agents.learner.trainer import train
from spadegym.families import get_family
from spadegym.level import Level
from spadegym.sandbox import Sandbox

DEFAULT = ["button_lock", "code_breaker", "grid_maze", "number_sequence", "job_schedule", "device_chain"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", default=DEFAULT)
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--level", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A learner setting, e.g. hint_prior=0 (value read as JSON).")
    args = parser.parse_args()
    envs = {}
    for name in args.families:
        fam = get_family(name)
        envs[name] = Level(fam.render(fam.level_knobs(args.level)))
    learner = make_learner(seed=args.seed, config=parse_sets(args.set))
    start = time.perf_counter()
    with Sandbox() as sandbox:
        curve = train(learner, sandbox, envs, episodes=args.episodes, eval_every=args.episodes, eval_seeds=32,
                      seed=args.seed)
    first, last = curve[0]["envs"], curve[-1]["envs"]
    rows = {e: {"before": first[e]["success"], "before_hint": first[e]["success_hint"],
                "after": last[e]["success"], "after_hint": last[e]["success_hint"]} for e in envs}
    print(json.dumps({"episodes": args.episodes, "level": args.level,
                      "seconds": round(time.perf_counter() - start, 1), "envs": rows}, indent=1))


if __name__ == "__main__":
    main()
