"""Red-team search: distinct failure clusters found per 100 proposals, red-team designer vs uniform draws.

Both arms hunt the same frozen target with the same proposal budget and the same
pipeline (gate, target plays, clustering, shrinking, confirmation on fresh
seeds); only the designer differs:

    redteam   the mutation designer as ``spadegym redteam`` runs it: rewarded by ``failure``
              (failure rate x feasibility) with the novelty bonus, the memory of found
              failures (``avoid_known``), fresh draws the most novel of 16 and never the same
              difficulty twice, edits only of levels the target lost at least once, each
              climbing one or two knobs (``mutation.climb``), slots shared over the skills
              by what they yielded (``allocate = "yield"``)
    uniform   levels drawn uniformly from the families (every knob uniform, every skill its
              even share), no learning, no memory

The target is an OpenAI-compatible server on 127.0.0.1 whose player
(``spadegym.llm.fake_players.FamilyPlayer``) plays five built-in families of
four skills well, except in planted blind spots of different rarity (judged on
the episode's opening observation; see ``BLIND_SPOTS``), plus whatever its
solvers get wrong by themselves (an observation-only player cannot always sort
four or five items in eight turns). A cluster counts once a case of it passed
confirmation. Prints per-arm figures for each seed and the ratio of the means;
``--json`` adds one JSON object as the last line.

    nice -n 19 python benchmarks/redteam.py [--budget 100] [--seeds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spadegym.families import get_family
from spadegym.llm import FakeOpenAIServer
from spadegym.llm.fake_players import FamilyPlayer, game_of, menu, read_nim
from spadegym.redteam import RedTeamConfig
from spadegym.redteam.hunt import redteam_async

FAMILIES = ["take_away", "knapsack", "hidden_order", "number_sequence", "motif_fill"]
ARMS = {"redteam": {"designer": "mutation"}, "uniform": {"designer": "uniform", "avoid_known": False}}


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


def run_arm(arm: str, seed: int, args: argparse.Namespace, url: str) -> dict[str, Any]:
    config = RedTeamConfig(target=f"openai:planted@{url}", families=args.families, budget=args.budget,
                           per_round=args.per_round, seed=seed, **ARMS[arm])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(redteam_async(config, Path(tmp) / "suite"))
        manifest = json.loads((Path(tmp) / "suite" / "manifest.json").read_text())
    clusters = sorted({c["cluster"] for c in manifest["cases"]})
    weaknesses = sorted({weakness(c["family"], c["knobs"], c["seeds"][0]) or f"own: {c['cluster']}"
                         for c in manifest["cases"]})
    return {"arm": arm, "seed": seed, "proposals": result.proposals, "failed_levels": result.failures,
            "clusters": len(clusters), "clusters_per_100": round(100 * len(clusters) / max(1, result.proposals), 2),
            "minimal_failures": manifest["search"]["clusters"], "cluster_keys": clusters,
            "weaknesses": len(weaknesses), "weaknesses_per_100": round(100 * len(weaknesses) / max(1, result.proposals), 2),
            "weakness_keys": weaknesses,
            # Proposals spent re-finding a known failure (failed levels beyond the first of each minimal failure).
            "repeats_per_100": round(100 * (result.failures - manifest["search"]["clusters"]) / max(1, result.proposals), 1),
            "episodes": manifest["search"]["episodes"], "validations": manifest["search"]["validations"],
            "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100, help="Proposals per arm and seed.")
    parser.add_argument("--per-round", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--families", nargs="+", default=FAMILIES)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    player = planted_player()
    for game, what, *_ in BLIND_SPOTS:
        print(f"blind spot  {game}: {what}")
    rows = []
    with FakeOpenAIServer(player) as server:
        for seed in range(args.seeds):
            for arm in args.arms:
                row = run_arm(arm, seed, args, server.url)
                rows.append(row)
                print(f"seed {seed}  {arm:<8} proposals {row['proposals']:>4}  failed levels {row['failed_levels']:>4}  "
                      f"clusters {row['clusters']:>2} ({row['clusters_per_100']:.1f} per 100)  "
                      f"weaknesses {row['weaknesses']:>2}  minimal failures {row['minimal_failures']:>2}  repeats {row['repeats_per_100']:.1f} per 100  "
                      f"{row['seconds']:.0f}s", flush=True)
                print(f"    {', '.join(row['cluster_keys'])}\n    {'; '.join(row['weakness_keys'])}", flush=True)
    per_arm = {}
    for arm in args.arms:
        mine = [r for r in rows if r["arm"] == arm]
        per_arm[arm] = {"clusters_per_100": round(statistics.mean(r["clusters_per_100"] for r in mine), 2),
                        "clusters_per_100_by_seed": [r["clusters_per_100"] for r in mine],
                        "failed_levels_per_100": round(statistics.mean(100 * r["failed_levels"] / r["proposals"]
                                                                       for r in mine), 1),
                        "repeats_per_100": round(statistics.mean(r["repeats_per_100"] for r in mine), 1),
                        "cluster_keys": sorted({k for r in mine for k in r["cluster_keys"]}),
                        "weaknesses_per_100": round(statistics.mean(r["weaknesses_per_100"] for r in mine), 2),
                        "weaknesses_per_100_by_seed": [r["weaknesses_per_100"] for r in mine],
                        "seconds": round(sum(r["seconds"] for r in mine), 1)}
    uniform = per_arm.get("uniform", {}).get("clusters_per_100")
    ratio = round(per_arm["redteam"]["clusters_per_100"] / uniform, 3) if uniform and "redteam" in per_arm else None
    uniform_weak = per_arm.get("uniform", {}).get("weaknesses_per_100")
    ratio_weak = round(per_arm["redteam"]["weaknesses_per_100"] / uniform_weak, 3) \
        if uniform_weak and "redteam" in per_arm else None
    for arm, figures in per_arm.items():
        print(f"{arm:<8} {figures['clusters_per_100']:.2f} clusters per 100 proposals "
              f"(by seed {figures['clusters_per_100_by_seed']}), {figures['failed_levels_per_100']:.1f} failed levels "
              f"and {figures['repeats_per_100']:.1f} repeats of a known failure per 100, "
              f"{len(figures['cluster_keys'])} distinct clusters over the seeds; {figures['weaknesses_per_100']:.2f} "
              f"distinct weaknesses per 100 (by seed {figures['weaknesses_per_100_by_seed']}), {figures['seconds']:.0f}s")
    print(f"ratio (red-team / uniform, distinct clusters per 100 proposals): {ratio}")
    print(f"ratio (red-team / uniform, distinct weaknesses per 100 proposals): {ratio_weak}")
    if args.json:
        print(json.dumps({"ratio_clusters_vs_uniform": ratio, "ratio_weaknesses_vs_uniform": ratio_weak,
                          "arms": per_arm, "runs": rows,
                          "budget": args.budget, "seeds": args.seeds, "families": args.families,
                          "blind_spots": [f"{g}: {w}" for g, w, *_ in BLIND_SPOTS]}))


if __name__ == "__main__":
    main()
