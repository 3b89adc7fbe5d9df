"""Does the adaptive curriculum beat fixed pools? Equal agent-episode budgets, one held-out suite.

Arms (each a full self-play run of the real loop; only the designer and the
buffer settings differ):

  adaptive_blend   mutation designer, blend reward (the paper's deployed reward)
  adaptive_regret  mutation designer, hint regret only
  uniform          fresh uniform draws over the families' levels (domain randomisation)
  fixed_easy       a fixed pool: every family at its easiest level
  fixed_all        a fixed pool: every family at every level (the paper's fixed baseline)
  staged           a hand-written schedule: level 0 of every family, then level 1, ... in equal
                   shares of the rounds (a reference: it knows the levels and the budget up front)

Every arm plays ``rounds x envs_per_round x (plays + hint_plays)`` training
episodes, then the learner is scored on the held-out suite (every family at
every level, seeds never trained on) without the hint. Every run is scored on
the same instances (``--heldout-seed``), so arms and seeds differ only in the
learner that plays them.

    python benchmarks/curriculum.py --jobs 2         # 3 seeds x 6 arms x 36 rounds, two runs at once (~1 h)
    python benchmarks/curriculum.py --json --seeds 3 --rounds 20
    python benchmarks/curriculum.py --arms adaptive_blend,fixed_all --curve-every 6   # and sample efficiency

Sample efficiency (``--curve-every N``): the adaptive arms are also scored on
the held-out suite every N rounds, and the benchmark prints the share of the
episode budget each needed to reach the best fixed pool's final held-out
success (None for a seed that never reached it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from spadegym.designers.sampler import baseline_overrides
from spadegym.loop import RunConfig, run

ARMS = {
    "adaptive_blend": {"designer": "mutation", "designer_reward": "blend"},
    "adaptive_regret": {"designer": "mutation", "designer_reward": "regret"},
    "uniform": {"designer": "uniform"},
    "fixed_easy": {"designer": "fixed:easy"},
    "fixed_all": {"designer": "fixed:all"},
    "staged": {"designer": "staged"},
}
FIXED = ("fixed_easy", "fixed_all")
ADAPTIVE = ("adaptive_blend", "adaptive_regret")


HELDOUT_SEED = 4242  # one set of held-out instances for every arm and seed


def run_arm(name: str, seed: int, rounds: int, workdir: Path, heldout_seeds: int = 64,
            sets: dict[str, Any] | None = None, heldout_seed: int = HELDOUT_SEED, curve_every: int = 0) -> dict:
    settings = apply_sets({**ARMS[name], "buffer": {}}, sets or {})  # --set applies to every arm
    if settings["designer"] != "mutation":  # a baseline keeps the buffer it is played with (RunConfig fills it in)
        intended = baseline_overrides(settings["designer"])
        settings["buffer"] = {k: v for k, v in settings["buffer"].items() if k not in intended}
    every = curve_every if name in ADAPTIVE else 0  # only the adaptive arms' curves are read
    config = RunConfig(seed=seed, rounds=rounds, heldout={"every": every, "seeds": heldout_seeds, "seed": heldout_seed},
                       **settings)
    quiet = Console(file=open("/dev/null", "w"))  # noqa: SIM115 - the run prints per round
    started = time.perf_counter()
    result = run(config, workdir / f"{name}-{seed}", console=quiet, report=False)
    final = result.summaries[-1].to_dict()
    curve, episodes = [], 0  # (training episodes so far, held-out success) at each evaluation
    for summary in result.summaries:
        episodes += summary.episodes
        if summary.heldout.get("heldout_success") is not None:
            curve.append((episodes, summary.heldout["heldout_success"]))
    return {"curve": curve, "heldout": final["heldout_success"], "heldout_hint": final.get("heldout_success_hint"),
            "heldout_hard": final.get("heldout_success_hard"), "by_level": final.get("heldout_by_level", {}),
            "episodes": sum(s.episodes for s in result.summaries),
            # Vendi score per level of the final pool (code) and of the levels added over the run (mean).
            "diversity_pool": final.get("diversity", {}).get("pool_code"),
            "diversity_new": _mean([s.diversity.get("new_code") for s in result.summaries]),
            "collapsed_rounds": sum(bool(s.diversity.get("collapsed")) for s in result.summaries),
            "seconds": time.perf_counter() - started}


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` run settings (``--set``), each value read as JSON where it parses."""
    sets: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            sets[key] = json.loads(value)
        except json.JSONDecodeError:
            sets[key] = value
    return sets


def apply_sets(settings: dict[str, Any], sets: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with each ``section.field`` (or top-level ``key``) of ``sets`` put in its place."""
    for key, value in sets.items():
        section, _, field = key.partition(".")
        if field:
            settings.setdefault(section, {})[field] = value
        else:
            settings[key] = value
    return settings


def sample_efficiency(runs: list[dict], target: float) -> dict[str, Any]:
    """Per run, the share of its episode budget at the first evaluation whose held-out success reached
    ``target`` (None: never reached)."""
    shares = [next((round(episodes / r["episodes"], 4) for episodes, success in r["curve"] if success >= target), None)
              for r in runs]
    return {"target": round(target, 4), "per_seed": shares, "mean_reached": _mean(shares),
            "reached": sum(s is not None for s in shares)}


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 4) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=36, help="Rounds per arm (36: the default run's budget).")
    parser.add_argument("--arms", default=",".join(ARMS))
    # 16 seeds (1,152 episodes) left +-0.013 of sampling noise per run, as large as the gaps between
    # arms; 64 halve it for ~25 s per run.
    parser.add_argument("--heldout-seeds", type=int, default=64, help="Unseen seeds per held-out level.")
    parser.add_argument("--heldout-seed", type=int, default=HELDOUT_SEED,
                        help="Seeds the held-out instances, the same for every arm and run seed.")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A run setting for every arm, e.g. buffer.replay_fraction=0.75 (value read as JSON).")
    parser.add_argument("--jobs", type=int, default=1, help="Arm runs at once, each in its own process (one per core).")
    parser.add_argument("--curve-every", type=int, default=0,
                        help="Score the adaptive arms on the held-out suite every N rounds too, for sample efficiency.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sets = parse_sets(args.set)
    arms = args.arms.split(",")
    results: dict[str, list[dict]] = {a: [] for a in arms}
    console = Console(stderr=True)
    jobs = [(arm, seed) for seed in range(args.first_seed, args.first_seed + args.seeds) for arm in arms]
    with tempfile.TemporaryDirectory(prefix="spadegym-curriculum-") as tmp, \
            ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_arm, arm, seed, args.rounds, Path(tmp), args.heldout_seeds, sets,
                               args.heldout_seed, args.curve_every): (arm, seed)
                   for arm, seed in jobs}
        done = {}
        for future in as_completed(futures):
            (arm, seed), r = futures[future], future.result()
            done[(arm, seed)] = r
            console.print(f"{arm:16s} seed {seed}: held-out {r['heldout']:.3f} "
                          f"(hint {r['heldout_hint']:.3f})  {r['episodes']} episodes  {r['seconds']:.0f}s")
        for arm, seed in jobs:  # per_seed lists stay in seed order
            results[arm].append(done[(arm, seed)])
    table = {}
    for arm, rs in results.items():
        values = [r["heldout"] for r in rs]
        table[arm] = {"mean": round(float(np.mean(values)), 4), "spread": round(float(np.std(values)), 4),
                      "per_seed": [round(v, 4) for v in values],
                      "hard_mean": round(float(np.mean([r["heldout_hard"] or 0 for r in rs])), 4),
                      "by_level": {level: round(float(np.mean([r["by_level"].get(level, 0.0) for r in rs])), 4)
                                   for level in rs[0]["by_level"]},
                      "diversity_pool": _mean([r["diversity_pool"] for r in rs]),
                      "diversity_new": _mean([r["diversity_new"] for r in rs]),
                      "collapsed_rounds": sum(r["collapsed_rounds"] for r in rs),
                      "episodes": int(np.mean([r["episodes"] for r in rs]))}
    best_fixed = max((table[a]["mean"] for a in FIXED if a in table), default=None)
    best_adaptive = max((table[a]["mean"] for a in ADAPTIVE if a in table), default=None)
    ratio = (best_adaptive / best_fixed) if best_fixed and best_adaptive is not None else None
    out = {"arms": table, "ratio_adaptive_over_best_fixed": None if ratio is None else round(ratio, 4),
           "episodes_per_arm": int(np.mean([t["episodes"] for t in table.values()])),
           "rounds": args.rounds, "seeds": args.seeds, "heldout_seed": args.heldout_seed}
    if args.curve_every and best_fixed is not None:
        out["sample_efficiency"] = {arm: sample_efficiency(results[arm], best_fixed) for arm in ADAPTIVE
                                    if arm in results}
    if args.json:
        print(json.dumps(out))
    else:
        t = Table("arm", "held-out success (no hint)", "spread", "by level", "hard levels", "per seed",
                  "pool diversity", "episodes")
        for arm, row in table.items():
            t.add_row(arm, f"{row['mean']:.3f}", f"{row['spread']:.3f}",
                      " ".join(f"{v:.2f}" for v in row["by_level"].values()), f"{row['hard_mean']:.3f}",
                      " ".join(f"{v:.3f}" for v in row["per_seed"]),
                      "-" if row["diversity_pool"] is None else f"{row['diversity_pool']:.2f}", str(row["episodes"]))
        Console().print(t)
        print(f"ratio adaptive / best fixed: {out['ratio_adaptive_over_best_fixed']}")
        for arm, eff in out.get("sample_efficiency", {}).items():
            print(f"{arm}: share of the budget to reach the best fixed pool's final {eff['target']:.3f}: "
                  f"{eff['per_seed']} (mean over seeds that reached it: {eff['mean_reached']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
