"""Red-team search: distinct confirmed failure clusters per 100 proposals, red-team search vs uniform draws.

Both arms hunt the same frozen target with the same proposal budget, in the same
space of levels (``--space``: by default every knob's ladder with its extension
and every variation choice, held-out ones included) and through the same pipeline
(gate, target plays, clustering, shrinking, confirmation on fresh seeds); only the
designer differs:

    redteam   ``spadegym redteam``'s designer (``search``): it proposes only open levels (not at or
              above a known minimal failure, not at or below a won level, never the same game twice):
              fresh draws lowered out of known failures, edges one change above a won level, climbs
              from levels the target lost some plays of; slots over the skills by what they yielded
    uniform   levels drawn uniformly from the same space (every knob and dimension uniform, every
              skill its even share), no learning, no memory

Targets (``--target``):

    planted           the control: ``FamilyPlayer`` behind the fake OpenAI-compatible server, five
                      built-in families of four skills played from the observation alone, with six
                      planted blind spots (``BLIND_SPOTS``), in the listed space (its player reads the
                      families' listed wording)
    learner:RUN       the built-in learner from a run's last checkpoint (a run directory, or a checkpoint)
    hf:PATH           a local model (``hf:$(spadegym models prepare smollm2)``: SmolLM2-135M)
    any agent spec

A cluster counts once a case of it passed confirmation; minimal failures count
every distinct minimal form found, confirmed or not. ``--retest SPEC`` scores each
red-team suite on the target and on SPEC (a later checkpoint of the run), as
``spadegym eval --baseline`` does: which failures training fixed, which remain.
Prints per-arm figures for each seed, the ratio of the means, and both at each hundred proposals spent
(uniform draws slow down as they repeat known failures); ``--json`` adds
one JSON object as the last line.

    nice -n 19 python benchmarks/redteam.py [--target planted] [--budget 100] [--seeds 3] [--json]
    nice -n 19 python benchmarks/redteam.py --target learner:runs/early --retest learner:runs/default --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spadegym.families import get_family

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # spadegym_testing: the doubles beside the package
from spadegym.redteam.config import load_redteam_config
from spadegym.redteam.hunt import redteam_async
from spadegym_testing.fake_players import FamilyPlayer, game_of, menu, read_nim
from spadegym_testing.fake_server import FakeOpenAIServer

PLANTED_FAMILIES = ["take_away", "knapsack", "hidden_order", "number_sequence", "motif_fill"]
ARMS = {"redteam": {"designer": "search"}, "uniform": {"designer": "uniform", "avoid_known": False}}


def _count(pattern: str, opening: str) -> int:
    return len(re.findall(pattern, opening, re.M))


def _number(label: str, opening: str) -> int:
    found = re.search(rf"^{label}: (\d+)", opening, re.M)
    return int(found.group(1)) if found else -1


def _line(opening: str, label: str) -> str:
    found = re.search(rf"^{label}: (.*)$", opening, re.M)
    return found.group(1) if found else ""


def _row(opening: str) -> int:
    return len(_line(opening, "row").split())


def _nim(opening: str, piles: int, limit: int) -> bool:
    state = read_nim(opening)
    return state is not None and len(state.piles) == piles and state.max_take == limit


def _stacked(opening: str, features: list[bool], fail: dict[int, float]) -> bool:
    """Stacked difficulty: the more hard features an instance has, the likelier the player errs (each
    instance decided once, from a hash of its opening, so replays agree)."""
    share = fail.get(sum(features), 0.0)
    return zlib.crc32(opening.encode()) / 2**32 < share


SEQUENCE_FEATURES = ["six options", "three terms to find", "no mistake allowed", "three terms shown"]
MOTIF_FEATURES = ["period 5", "six symbols", "three tiles to fill"]


def _sequence_load(o: str) -> list[bool]:
    return [len(menu(o)) == 6, _number("terms still to find", o) == 3, _number("mistakes allowed", o) == 0,
            len(_line(o, "sequence").split(",")) == 4]  # three terms shown


def _motif_load(o: str) -> list[bool]:
    return [_row(o) >= 13, len(menu(o)) == 6, _number("tiles to fill", o) == 3]  # period 5, six symbols, 3 blanks


#: (game title, what the blind spot is, a test of the episode's opening observation, and for a
#: graded one the hard features it stacks with their names). Three are sharp (every instance of
#: the region fails), one at the easy end of its knobs and one in the middle of a knob's range;
#: two are graded, as a model's weaknesses often are: the share of instances it fails grows with
#: the hard features stacked in a level, all of them failing only in a corner that uniform draws
#: rarely reach. Their rarity under uniform draws differs.
BLIND_SPOTS: list[tuple[str, str, Callable[[str], bool], tuple[Callable[[str], list[bool]], list[str]] | None]] = [
    ("take-away game", "three piles with a take limit of 3", lambda o: _nim(o, 3, 3), None),
    ("take-away game", "two piles with a take limit of 2 (the easiest games)", lambda o: _nim(o, 2, 2), None),
    ("knapsack", "eight items (long lists)", lambda o: _count(r"^item \d+:", o) >= 8, None),
    ("motif fill", "a motif of period 2 over four symbols (the middle of the alphabet range)",
     lambda o: _row(o) <= 8 and len(menu(o)) == 4, None),
    ("number sequence", "graded: of six options, three terms to find, no mistake allowed, three terms shown, "
     "an instance with two fails 30% of the time, three 70%, all four always",
     lambda o: _stacked(o, _sequence_load(o), {2: 0.3, 3: 0.7, 4: 1.0}), (_sequence_load, SEQUENCE_FEATURES)),
    ("motif fill", "graded: of period 5, six symbols, three tiles to fill, two fail 40%, all three always",
     lambda o: _stacked(o, _motif_load(o), {2: 0.4, 3: 1.0}), (_motif_load, MOTIF_FEATURES)),
]


def weakness(family: str, knobs: dict[str, Any], seed: int) -> str | None:
    """The planted weakness a confirmed case exhibits, read off its opening as the player reads it: a sharp
    blind spot by name, a graded one by the hard features its level stacks (two forms of one stack are one
    weakness); None for a failure of the player's own."""
    namespace: dict[str, Any] = {}
    exec(get_family(family).render(knobs), namespace)  # a built-in family's own file, standard library only
    env = next(v for k, v in namespace.items() if k.endswith("Env") and isinstance(v, type))()
    opening = env.reset(seed=seed)[0]
    for game, what, test, graded in BLIND_SPOTS:
        if game_of(opening) != game:
            continue
        if graded is None and test(opening):
            return f"{game}: {what}"
        if graded is not None and sum(load := graded[0](opening)) >= 2:
            return f"{game}: " + " + ".join(name for name, hard in zip(graded[1], load) if hard)
    return None


def planted_player() -> FamilyPlayer:
    games = {game for game, *_ in BLIND_SPOTS}
    tests = {g: [test for game, _, test, _ in BLIND_SPOTS if game == g] for g in games}
    return FamilyPlayer({g: (lambda o, ts=ts: any(t(o) for t in ts)) for g, ts in tests.items()})


def run_arm(arm: str, seed: int, args: argparse.Namespace, target: str, out: Path) -> dict[str, Any]:
    config = load_redteam_config(None, {"target": target, "families": args.families, "budget": args.budget,
                                        "per_round": args.per_round, "seed": seed, "space": args.space,
                                        # A proposal adds at most one case: the suite's cap must not cut the count.
                                        "max_cases": max(args.budget, 1), **ARMS[arm]}, args.set)
    started = time.perf_counter()
    suite = out / f"{arm}-{seed}"
    result = asyncio.run(redteam_async(config, suite))
    seconds = time.perf_counter() - started
    manifest = json.loads((suite / "manifest.json").read_text())
    clusters = sorted({c["cluster"] for c in manifest["cases"]})
    spent, found, curve = 0, 0, []  # confirmed clusters after each round's proposals
    for summary in result.summaries:
        spent, found = spent + summary["proposals"], summary["cases"]
        curve.append([spent, found])
    row = {"arm": arm, "seed": seed, "proposals": result.proposals, "failed_levels": result.failures,
           "clusters": len(clusters), "clusters_per_100": per_100(len(clusters), result.proposals),
           "minimal_failures": manifest["search"]["clusters"],
           "minimal_failures_per_100": per_100(manifest["search"]["clusters"], result.proposals),
           "cluster_keys": clusters, "curve": curve,
           # Proposals spent re-finding a known failure (failed levels beyond the first of each minimal failure).
           "repeats_per_100": per_100(result.failures - manifest["search"]["clusters"], result.proposals),
           "episodes": manifest["search"]["episodes"], "validations": manifest["search"]["validations"],
           "seconds": round(seconds, 1),
           "seconds_per_confirmed": round(seconds / len(clusters), 1) if clusters else None,
           "suite": str(suite)}
    if args.target == "planted":
        weaknesses = sorted({weakness(c["family"], c["knobs"], c["seeds"][0]) or f"own: {c['cluster']}"
                             for c in manifest["cases"]})
        row.update(weaknesses=len(weaknesses), weaknesses_per_100=per_100(len(weaknesses), result.proposals),
                   weakness_keys=weaknesses)
    return row


def per_100(count: int, proposals: int) -> float:
    return round(100 * count / max(1, proposals), 2)


def found_by(curve: list[list[int]], proposals: int) -> int:
    """Confirmed clusters an arm had found once it had spent ``proposals`` (its last round at or before them)."""
    return max([found for spent, found in curve if spent <= proposals], default=0)


def by_spend(rows: list[dict[str, Any]], arms: list[str], budget: int) -> dict[int, dict[str, Any]]:
    """Confirmed clusters per 100 proposals once each arm had spent 100, 200, ... proposals (the mean over seeds,
    from the runs' curves), and their ratio: uniform draws slow down as they repeat known failures, so the
    ratio depends on the spend it is read at."""
    out: dict[int, dict[str, Any]] = {}
    for spend in sorted({*range(100, budget + 1, 100), budget}):
        figures = {}
        for arm in arms:
            mine = [r for r in rows if r["arm"] == arm]
            figures[arm] = round(statistics.mean(per_100(found_by(r["curve"], spend), min(spend, r["proposals"]))
                                                 for r in mine), 2)
        red, uniform = figures.get("redteam"), figures.get("uniform")
        out[spend] = {**figures, "ratio": round(red / uniform, 3) if red is not None and uniform else None}
    return out


def retest(suite: str, target: str, later: str, plays: int) -> dict[str, Any]:
    """The suite scored on the target it was found against and on a later agent, as ``spadegym eval --baseline``
    compares them: the cases training fixed, those that remain, and those the later agent broke."""
    from spadegym.redteam import evaluate_suite, fixed, regressions

    before = evaluate_suite(suite, [target], plays=plays)
    after = evaluate_suite(suite, [later], plays=plays)
    cases = after["agents"][later]["cases"]
    still = [c for c, r in cases.items() if not r["passed"]]
    return {"cases": len(cases), "failed_before": sum(not r["passed"] for r in before["agents"][target]["cases"].values()),
            "fixed": fixed(after, before)[later], "remaining": still, "regressions": regressions(after, before)[later],
            "by_case": {c: {"cluster": r["cluster"], "before": before["agents"][target]["cases"][c]["win_rate"],
                            "after": r["win_rate"]} for c, r in cases.items()}}


def summarise(rows: list[dict[str, Any]], arms: list[str]) -> dict[str, dict[str, Any]]:
    per_arm = {}
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        confirmed = sum(r["clusters"] for r in mine)
        per_arm[arm] = {
            "clusters_per_100": round(statistics.mean(r["clusters_per_100"] for r in mine), 2),
            "clusters_per_100_by_seed": [r["clusters_per_100"] for r in mine],
            "minimal_failures_per_100": round(statistics.mean(r["minimal_failures_per_100"] for r in mine), 2),
            "minimal_failures_per_100_by_seed": [r["minimal_failures_per_100"] for r in mine],
            "proposals_by_seed": [r["proposals"] for r in mine],
            "clusters_by_seed": [r["clusters"] for r in mine],
            "failed_levels_per_100": round(statistics.mean(100 * r["failed_levels"] / max(1, r["proposals"])
                                                           for r in mine), 1),
            "repeats_per_100": round(statistics.mean(r["repeats_per_100"] for r in mine), 1),
            "cluster_keys": sorted({k for r in mine for k in r["cluster_keys"]}),
            "seconds": round(sum(r["seconds"] for r in mine), 1),
            "seconds_per_confirmed": round(sum(r["seconds"] for r in mine) / confirmed, 1) if confirmed else None,
        }
        if all("weaknesses_per_100" in r for r in mine):
            per_arm[arm].update(weaknesses_per_100=round(statistics.mean(r["weaknesses_per_100"] for r in mine), 2),
                                weaknesses_per_100_by_seed=[r["weaknesses_per_100"] for r in mine])
    return per_arm


def ratio(per_arm: dict[str, dict[str, Any]], key: str) -> float | None:
    red, uniform = per_arm.get("redteam", {}).get(key), per_arm.get("uniform", {}).get(key)
    return round(red / uniform, 3) if red is not None and uniform else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="planted", help="planted (the control) or an agent spec.")
    parser.add_argument("--budget", type=int, default=100, help="Proposals per arm and seed.")
    parser.add_argument("--per-round", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="Seeds first-seed .. first-seed + seeds - 1 (one seed a process).")
    parser.add_argument("--families", nargs="+", default=None, help="Only these families (planted: its five).")
    parser.add_argument("--space", choices=["full", "listed"], default=None,
                        help="The levels both arms draw from (default: full; planted: listed).")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--set", action="append", default=[], help="A red-team setting for both arms, key=value.")
    parser.add_argument("--retest", default=None, help="Score each red-team suite on this agent too (fixed by training).")
    parser.add_argument("--retest-plays", type=int, default=4, help="Plays per case seed in the retest.")
    parser.add_argument("--keep", default=None, help="Keep the suites in this directory (default: a temporary one).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    planted = args.target == "planted"
    args.families = args.families or (PLANTED_FAMILIES if planted else None)
    args.space = args.space or ("listed" if planted else "full")
    rows, retests = [], {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        out = Path(args.keep or tmp)
        target = args.target
        if planted:
            for game, what, *_ in BLIND_SPOTS:
                print(f"blind spot  {game}: {what}")
            server = stack.enter_context(FakeOpenAIServer(planted_player()))
            target = f"openai:planted@{server.url}"
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for arm in args.arms:
                row = run_arm(arm, seed, args, target, out)
                rows.append(row)
                print(f"seed {seed}  {arm:<8} proposals {row['proposals']:>4}  failed levels {row['failed_levels']:>4}  "
                      f"clusters {row['clusters']:>2} ({row['clusters_per_100']:.1f} per 100)  "
                      f"minimal failures {row['minimal_failures']:>2} ({row['minimal_failures_per_100']:.1f} per 100)  "
                      f"repeats {row['repeats_per_100']:.1f} per 100  {row['seconds']:.0f}s "
                      f"({row['seconds_per_confirmed'] or 0:.0f}s per confirmed)", flush=True)
                print(f"    {', '.join(row['cluster_keys'])}", flush=True)
                if planted:
                    print(f"    {'; '.join(row['weakness_keys'])}", flush=True)
                if args.retest and arm == "redteam":
                    retests[seed] = retest(row["suite"], target, args.retest, args.retest_plays)
                    r = retests[seed]
                    print(f"    retest on {args.retest}: {len(r['fixed'])} of {r['failed_before']} failed cases fixed, "
                          f"{len(r['remaining'])} remain, {len(r['regressions'])} regressions", flush=True)
    per_arm = summarise(rows, args.arms)
    equal = {}
    if "redteam" in per_arm and "uniform" in per_arm:  # the uniform arm's clusters at the red team's spend
        red = [r for r in rows if r["arm"] == "redteam"]
        uni = {r["seed"]: r for r in rows if r["arm"] == "uniform"}
        equal = {"proposals": [r["proposals"] for r in red],
                 "redteam": [r["clusters"] for r in red],
                 "uniform": [found_by(uni[r["seed"]]["curve"], r["proposals"]) for r in red]}
    for arm, figures in per_arm.items():
        print(f"{arm:<8} {figures['clusters_per_100']:.2f} confirmed clusters per 100 proposals "
              f"(by seed {figures['clusters_per_100_by_seed']}, proposals {figures['proposals_by_seed']}), "
              f"{figures['minimal_failures_per_100']:.2f} minimal failures per 100 "
              f"(by seed {figures['minimal_failures_per_100_by_seed']}), {figures['failed_levels_per_100']:.1f} "
              f"failed levels and {figures['repeats_per_100']:.1f} repeats of a known failure per 100, "
              f"{len(figures['cluster_keys'])} distinct clusters over the seeds, {figures['seconds']:.0f}s "
              f"({figures['seconds_per_confirmed'] or 0:.0f}s per confirmed cluster)")
    if equal:
        print(f"at the red team's spend ({equal['proposals']} proposals): red team {equal['redteam']} "
              f"confirmed clusters, uniform {equal['uniform']}")
    spends = by_spend(rows, args.arms, args.budget)
    for spend, figures in spends.items():
        print(f"at a spend of {spend} proposals, confirmed clusters per 100: "
              + ", ".join(f"{arm} {figures[arm]:.1f}" for arm in args.arms) + f", ratio {figures['ratio']}")
    ratios = {key: ratio(per_arm, key) for key in ("clusters_per_100", "minimal_failures_per_100", "weaknesses_per_100")}
    print(f"ratio (red-team / uniform, confirmed clusters per 100 proposals): {ratios['clusters_per_100']}")
    print(f"ratio (red-team / uniform, minimal failures per 100 proposals): {ratios['minimal_failures_per_100']}")
    if planted:
        print(f"ratio (red-team / uniform, distinct weaknesses per 100 proposals): {ratios['weaknesses_per_100']}")
    if args.json:
        print(json.dumps({"target": args.target, "ratio_clusters_vs_uniform": ratios["clusters_per_100"],
                          "ratio_minimal_failures_vs_uniform": ratios["minimal_failures_per_100"],
                          "ratio_weaknesses_vs_uniform": ratios["weaknesses_per_100"], "arms": per_arm,
                          "at_equal_proposals": equal, "by_spend": spends, "retest": retests, "runs": rows, "budget": args.budget,
                          "seeds": list(range(args.first_seed, args.first_seed + args.seeds)), "space": args.space, "families": args.families, "settings": args.set,
                          "blind_spots": [f"{g}: {w}" for g, w, *_ in BLIND_SPOTS] if planted else None}))


if __name__ == "__main__":
    main()
