"""Does the adaptive curriculum beat fixed pools where no arm trained? Equal budgets, four held-out suites.

Arms (each a full self-play run of the real loop; only the designer and the
buffer settings differ):

  adaptive_blend   mutation designer, blend reward (the paper's deployed reward): the default run
  adaptive_regret  mutation designer, hint regret only
  adaptive_lp      the default run, replay by no-hint learning progress (buffer.replay_score)
  uniform          fresh uniform draws over the families' listed levels and training variations
  fixed_easy       a fixed pool: every training family at its easiest level
  fixed_all        a fixed pool: every training family at every listed level (the paper's fixed baseline)
  staged           a hand-written schedule: level 0 of every family, then level 1, ... in equal
                   shares of the rounds (a reference: it knows the levels and the budget up front)
  oracle_frontier  a fixed pool of the frontier suite's own levels, played on training seeds
  oracle_edge      a fixed pool of the edge-case suite's own levels, played on training seeds
  oracle_unseen    a fixed pool of the unseen families' listed levels, played on training seeds

The oracle arms are not baselines and never enter a ratio: they train on a
held-out suite's levels, so their figure on that suite is the most a pool
gives there at this budget (``ceiling_by_suite``: oracle / best fixed pool).

Every arm plays ``rounds x envs_per_round x (plays + hint_plays)`` training
episodes, then the learner is scored without the hint on the held-out suites
(``spadegym.loop.heldout``): in_distribution (the training families' listed
levels: what fixed_all trains on), frontier (one and two steps past each
family's hardest listed level), edge_cases (the listed levels with the
held-out slice of every variation dimension) and unseen_families (one family
per skill that no arm trains on, rotated over seeds). Every run of one seed is
scored on the same instances (``--heldout-seed``), so the arms of a seed differ
only in the learner that plays them; the random agent is scored on the same
instances (``random_by_suite``).

For each suite the benchmark prints each arm's mean and per-seed success, the
ratio of the adaptive arm (``adaptive_blend``, or the first adaptive arm run)
over the best fixed pool of that suite, and the paired 95% interval of their
difference over seeds (t with n-1 degrees of freedom); for the unseen families
also the adaptive arm against random play.

    python benchmarks/curriculum.py --json --seeds 5                      # the study (3 arms x 5 seeds x 36 rounds)
    python benchmarks/curriculum.py --seeds 2 --rounds 12 --arms adaptive_blend,fixed_all   # a quick screen
    python benchmarks/curriculum.py --arms adaptive_blend,fixed_all --curve-every 6   # and sample efficiency
    python benchmarks/curriculum.py --json --seeds 2 --results study/    # later --seeds 5 runs only the seeds not kept

Sample efficiency (``--curve-every N``): the adaptive arms are also scored on
the in-distribution suite every N rounds, and the benchmark prints the share of
the episode budget each needed to reach the best fixed pool's final figure
(None for a seed that never reached it).
"""

from __future__ import annotations

import argparse
import asyncio
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

from spadegym.designers.registry import DESIGNERS
from spadegym.designers.sampler import baseline_overrides, pool_overrides
from spadegym.loop import RunConfig, run
from spadegym.loop.heldout import BUILT_IN_SUITES

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared statistics module beside it
from paired import paired  # noqa: E402

ARMS = {
    "adaptive_blend": {"designer": "mutation", "designer_reward": "blend"},
    "adaptive_regret": {"designer": "mutation", "designer_reward": "regret"},
    "adaptive_lp": {"designer": "mutation", "designer_reward": "blend", "buffer": {"replay_score": "learning_progress"}},
    "uniform": {"designer": "uniform"},
    "fixed_easy": {"designer": "fixed:easy"},
    "fixed_all": {"designer": "fixed:all"},
    "staged": {"designer": "staged"},
    "oracle_frontier": {"designer": "pool"},
    "oracle_edge": {"designer": "pool"},
    "oracle_unseen": {"designer": "pool"},
}
DEFAULT_ARMS = ("adaptive_blend", "fixed_all", "fixed_easy")
FIXED = ("fixed_easy", "fixed_all")
ADAPTIVE = ("adaptive_blend", "adaptive_regret", "adaptive_lp")
#: Each oracle arm and the held-out suite whose levels it trains on.
ORACLE = {"oracle_frontier": "frontier", "oracle_edge": "edge_cases", "oracle_unseen": "unseen_families"}
SUITES = BUILT_IN_SUITES

HELDOUT_SEED = 4242  # one set of held-out instances for every arm of a seed


def heldout_settings(seeds: int, heldout_seed: int, every: int = 0) -> dict[str, Any]:
    """Every built-in suite at the end (the first one also every ``every`` rounds), on fixed instances."""
    return {"suites": list(SUITES), "every": every, "suites_every": 0, "seeds": seeds, "seed": heldout_seed}


def run_arm(name: str, seed: int, rounds: int, workdir: Path, heldout_seeds: int = 32,
            sets: dict[str, Any] | None = None, heldout_seed: int = HELDOUT_SEED, curve_every: int = 0) -> dict:
    settings = apply_sets({"buffer": {}, **json.loads(json.dumps(ARMS[name]))}, sets or {})  # --set: every arm
    if name in ORACLE:
        settings["pool"] = {"path": str(suite_pool(ORACLE[name], seed, workdir / f"{name}-{seed}-pool"))}
    if settings["designer"] != "mutation":  # a baseline keeps the buffer it is played with (RunConfig fills it in)
        intended = pool_overrides(0) if name in ORACLE else baseline_overrides(DESIGNERS.parse(settings["designer"]))
        settings["buffer"] = {k: v for k, v in settings["buffer"].items() if k not in intended}
    every = curve_every if name in ADAPTIVE else 0  # only the adaptive arms' curves are read
    config = RunConfig(seed=seed, rounds=rounds, heldout=heldout_settings(heldout_seeds, heldout_seed, every),
                       **settings)
    quiet = Console(file=open("/dev/null", "w"))  # noqa: SIM115 - the run prints per round
    started = time.perf_counter()
    result = run(config, workdir / f"{name}-{seed}", console=quiet, report=False)
    final = result.summaries[-1].to_dict()
    curve, episodes = [], 0  # (training episodes so far, in-distribution held-out success) at each evaluation
    for summary in result.summaries:
        episodes += summary.episodes
        if summary.heldout.get("heldout_success") is not None:
            curve.append((episodes, summary.heldout["heldout_success"]))
    pool = [s.diversity.get("pool") for s in result.summaries]
    return {"curve": curve, "suites": final.get("heldout_by_suite", {}), "heldout_hint": final.get("heldout_success_hint"),
            "by_level": final.get("heldout_by_level", {}), "episodes": sum(s.episodes for s in result.summaries),
            # Vendi score per level (identity: code and play) of the pool, over the run and at its end.
            "diversity_pool_mean": _mean(pool), "diversity_pool_min": _min(pool), "diversity_pool_final": pool[-1],
            "diversity_pool_curve": pool,
            "diversity_code_final": final.get("diversity", {}).get("pool_code"),
            "collapsed_rounds": sum(bool(s.diversity.get("collapsed")) for s in result.summaries),
            "difficulty_new_max": max((s.difficulty_new_mean or 0.0 for s in result.summaries), default=0.0),
            "seconds": time.perf_counter() - started}


def suite_pool(suite: str, seed: int, folder: Path) -> Path:
    """A held-out suite's levels for a run of ``seed`` (its unseen families left out, or only they for
    ``unseen_families``) as environment files in ``folder``."""
    from spadegym.loop.heldout import build_suite

    folder.mkdir(parents=True, exist_ok=True)
    for env in build_suite(suite=suite, exclude=RunConfig(seed=seed).training_exclusions()):
        (folder / f"{env.env_id}.py").write_text(env.spec.source)
    return folder


def random_suites(seed: int, heldout_seeds: int = 32, heldout_seed: int = HELDOUT_SEED) -> dict[str, float]:
    """The random agent's success on a seed's suites (the same instances the arms of that seed play)."""
    from spadegym.agents import make_agent
    from spadegym.loop.heldout import build_suites, evaluate
    from spadegym.sandbox import Sandbox

    config = RunConfig(seed=seed, heldout=heldout_settings(heldout_seeds, heldout_seed))
    suite = build_suites(SUITES, unseen=config.training_exclusions())
    with Sandbox(config.sandbox) as box:
        result, _ = asyncio.run(evaluate(make_agent("random", seed=seed), box, suite, seeds=heldout_seeds,
                                         seed=heldout_seed, hint=False, rollout=config.rollout))
    return result["heldout_by_suite"]


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


def summarize(results: dict[str, list[dict]], randoms: list[dict[str, float]]) -> dict[str, Any]:
    """Per suite: each arm's figures, the adaptive arm over the best fixed pool, and against random play."""
    table: dict[str, Any] = {}
    for arm, rs in results.items():
        table[arm] = {
            "suites": {s: {"mean": round(float(np.mean([r["suites"].get(s, 0.0) for r in rs])), 4),
                           "per_seed": [round(r["suites"].get(s, 0.0), 4) for r in rs]} for s in SUITES},
            "heldout_hint": _mean([r["heldout_hint"] for r in rs]),
            "diversity_pool_mean": _mean([r["diversity_pool_mean"] for r in rs]),
            "diversity_pool_min": _mean([r["diversity_pool_min"] for r in rs]),
            "diversity_pool_final": _mean([r["diversity_pool_final"] for r in rs]),
            "diversity_code_final": _mean([r["diversity_code_final"] for r in rs]),
            "collapsed_rounds": sum(r["collapsed_rounds"] for r in rs),
            "difficulty_new_max": _mean([r["difficulty_new_max"] for r in rs]),
            "episodes": int(np.mean([r["episodes"] for r in rs])),
        }
    adaptive = next((a for a in ADAPTIVE if a in table), None)
    out: dict[str, Any] = {"arms": table, "adaptive_arm": adaptive,
                           "random_by_suite": {s: _mean([r.get(s) for r in randoms]) for s in SUITES} if randoms else {},
                           "ratio_by_suite": {}, "paired_by_suite": {}, "best_fixed_by_suite": {}}
    fixed = [a for a in FIXED if a in table]
    best_fixed = {s: max(fixed, key=lambda a: table[a]["suites"][s]["mean"]) for s in SUITES} if fixed else {}
    for suite, best in best_fixed.items():
        if adaptive is None:
            break
        top, base = table[adaptive]["suites"][suite], table[best]["suites"][suite]
        out["best_fixed_by_suite"][suite] = best
        out["ratio_by_suite"][suite] = round(top["mean"] / base["mean"], 4) if base["mean"] else None
        out["paired_by_suite"][suite] = paired(top["per_seed"], base["per_seed"])
    for arm, suite in ORACLE.items():
        if arm in table and best_fixed:
            base = table[best_fixed[suite]]["suites"][suite]["mean"]
            out.setdefault("ceiling_by_suite", {})[suite] = \
                round(table[arm]["suites"][suite]["mean"] / base, 4) if base else None
    if adaptive is not None and randoms:
        out["adaptive_minus_random"] = {s: paired(table[adaptive]["suites"][s]["per_seed"], [r.get(s, 0.0) for r in randoms])
                                        for s in SUITES}
    ratios = out["ratio_by_suite"]
    if ratios:
        shift = [ratios.get("frontier"), ratios.get("edge_cases")]
        unseen = out.get("adaptive_minus_random", {}).get("unseen_families", {})
        out["goals"] = {
            "frontier_edge_ratio": round(float(np.mean(shift)), 4) if None not in shift else None,  # goal >= 1.3
            "in_distribution_ratio": ratios.get("in_distribution"),  # goal >= 1.0
            "unseen_above_random": (unseen.get("ci95") or [0])[0] > 0 if unseen else None,  # interval above 0
        }
        out["ratio_adaptive_over_best_fixed"] = ratios.get("in_distribution")  # the old single figure
        out["goals"].update(diversity_goal(results.get(adaptive, []), results.get("fixed_all", [])))
    return out


def diversity_goal(adaptive: list[dict], fixed: list[dict]) -> dict[str, Any]:
    """The adaptive pool's diversity against the pool of all listed levels, round by round of the same seed:
    the rounds below it (goal: none) of the rounds compared, and the lowest round's margin."""
    pairs = [(a, f) for run, base in zip(adaptive, fixed)
             for a, f in zip(run.get("diversity_pool_curve") or [], base.get("diversity_pool_curve") or [])
             if a is not None and f is not None]
    if not pairs:
        return {}
    return {"diversity_rounds_below_fixed": sum(a < f for a, f in pairs), "diversity_rounds_compared": len(pairs),
            "diversity_lowest_margin": round(min(a - f for a, f in pairs), 4)}


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 4) if values else None


def _min(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(min(values)), 4) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=36, help="Rounds per arm (36: the default run's budget).")
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"Comma-separated, of: {', '.join(ARMS)}.")
    # 32 seeds per level: 1,536 instances in the suites of 48 levels (about +-0.012 of sampling noise per run), on
    # instances shared by the arms of a seed, so paired differences carry less.
    parser.add_argument("--heldout-seeds", type=int, default=32, help="Unseen seeds per held-out level.")
    parser.add_argument("--heldout-seed", type=int, default=HELDOUT_SEED,
                        help="Seeds the held-out instances, the same for every arm and run seed.")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A run setting for every arm, e.g. buffer.replay_fraction=0.75 (value read as JSON).")
    parser.add_argument("--jobs", type=int, default=1, help="Arm runs at once, each in its own process (one per core).")
    parser.add_argument("--curve-every", type=int, default=0,
                        help="Score the adaptive arms on the in-distribution suite every N rounds too (sample efficiency).")
    parser.add_argument("--no-random", action="store_true", help="Skip scoring the random agent on the suites.")
    parser.add_argument("--results", type=Path, default=None,
                        help="A folder that keeps each finished run's figures (ARM-SEED.json) and reuses those already "
                             "there: a long study can be run a few seeds at a time and summed up at the end.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sets = parse_sets(args.set)
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arm {unknown[0]!r}; arms: {', '.join(ARMS)}")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results: dict[str, list[dict]] = {a: [] for a in arms}
    console = Console(stderr=True)
    jobs = [(arm, seed) for seed in seeds for arm in arms]
    done: dict[tuple[str, int], Any] = {}
    if args.results:
        args.results.mkdir(parents=True, exist_ok=True)
        study = {"rounds": args.rounds, "heldout_seeds": args.heldout_seeds, "heldout_seed": args.heldout_seed,
                 "sets": sets}
        kept_study = args.results / "study.json"
        if kept_study.is_file() and json.loads(kept_study.read_text()) != study:
            parser.error(f"{args.results} holds runs of other settings ({kept_study.read_text()}): "
                         "name a fresh --results folder or the same settings")
        kept_study.write_text(json.dumps(study))
        for arm, seed in [*jobs, *[("random", s) for s in seeds]]:
            kept = args.results / f"{arm}-{seed}.json"
            if kept.is_file():
                done[(arm, seed)] = json.loads(kept.read_text())
    with tempfile.TemporaryDirectory(prefix="spadegym-curriculum-") as tmp, \
            ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_arm, arm, seed, args.rounds, Path(tmp), args.heldout_seeds, sets,
                               args.heldout_seed, args.curve_every): (arm, seed)
                   for arm, seed in jobs if (arm, seed) not in done}
        if not args.no_random:
            futures.update({pool.submit(random_suites, seed, args.heldout_seeds, args.heldout_seed): ("random", seed)
                            for seed in seeds if ("random", seed) not in done})
        for future in as_completed(futures):
            (arm, seed), r = futures[future], future.result()
            done[(arm, seed)] = r
            if args.results:
                (args.results / f"{arm}-{seed}.json").write_text(json.dumps(r))
            figures = r if arm == "random" else r["suites"]
            timing = "" if arm == "random" else f"  {r['episodes']} episodes  {r['seconds']:.0f}s"
            console.print(f"{arm:16s} seed {seed}: " + " ".join(f"{s} {v:.3f}" for s, v in figures.items()) + timing)
        for arm, seed in jobs:  # per_seed lists stay in seed order
            results[arm].append(done[(arm, seed)])
        randoms = [done[("random", seed)] for seed in seeds if ("random", seed) in done]
    out = summarize(results, randoms)
    out.update({"episodes_per_arm": int(np.mean([t["episodes"] for t in out["arms"].values()])),
                "rounds": args.rounds, "seeds": args.seeds, "first_seed": args.first_seed,
                "heldout_seed": args.heldout_seed, "heldout_seeds": args.heldout_seeds, "sets": sets})
    best_fixed = out["arms"][out["best_fixed_by_suite"]["in_distribution"]]["suites"]["in_distribution"]["mean"] \
        if out.get("best_fixed_by_suite") else None
    if args.curve_every and best_fixed is not None:
        out["sample_efficiency"] = {arm: sample_efficiency(results[arm], best_fixed) for arm in ADAPTIVE
                                    if arm in results}
    if args.json:
        print(json.dumps(out))
        return 0
    t = Table("arm", *SUITES, "in-dist. hint", "pool diversity (mean, min)", "collapsed rounds", "episodes")
    rows = [*out["arms"].items()]
    for arm, row in rows:
        t.add_row(arm, *(f"{row['suites'][s]['mean']:.3f} ({' '.join(f'{v:.2f}' for v in row['suites'][s]['per_seed'])})"
                         for s in SUITES),
                  "-" if row["heldout_hint"] is None else f"{row['heldout_hint']:.3f}",
                  f"{row['diversity_pool_mean']} {row['diversity_pool_min']}", str(row["collapsed_rounds"]),
                  str(row["episodes"]))
    if out["random_by_suite"]:
        t.add_row("random agent", *(f"{out['random_by_suite'][s]:.3f}" for s in SUITES), "", "", "", "")
    Console().print(t)
    for suite in SUITES:
        if suite in out["ratio_by_suite"]:
            p = out["paired_by_suite"][suite]
            print(f"{suite}: {out['adaptive_arm']} / best fixed ({out['best_fixed_by_suite'][suite]}) = "
                  f"{out['ratio_by_suite'][suite]}; difference {p['mean']:+.3f}, 95% interval {p.get('ci95')}")
    for suite, ceiling in out.get("ceiling_by_suite", {}).items():
        print(f"{suite}: the pool of its own levels / best fixed = {ceiling} (the most a pool gives there)")
    if "goals" in out:
        print(f"goals: {out['goals']}")
    for arm, eff in out.get("sample_efficiency", {}).items():
        print(f"{arm}: share of the budget to reach the best fixed pool's final {eff['target']:.3f}: "
              f"{eff['per_seed']} (mean over seeds that reached it: {eff['mean_reached']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
