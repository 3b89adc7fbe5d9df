"""Red-team search: distinct failure clusters found per 100 proposals, red-team designer vs uniform draws.

Both arms hunt the same frozen target with the same budget and the same
pipeline (gate, target plays, clustering, shrinking, confirmation on fresh
seeds); only the designer differs:

    redteam   the mutation designer rewarded by ``failure`` (failure rate x feasibility) with the novelty
              bonus and the memory of found failures (``avoid_known``), as ``spadegym redteam`` runs it
    uniform   levels drawn uniformly from the families (every knob uniform), no learning, no memory

The target is an OpenAI-compatible server on 127.0.0.1 whose player plays the
take-away game optimally (``spadegym.llm.fake_players.NimPlayer``) except in
planted blind spots of its opening position: three piles with a take limit of
3, or a pile of at least ``--big`` stones. A cluster counts once a case of it
passed confirmation. Prints per-arm figures for each seed and the ratio of the
means; ``--json`` adds one JSON object as the last line.

    nice -n 19 python benchmarks/redteam.py [--budget 100] [--seeds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from spadegym.llm import FakeOpenAIServer
from spadegym.llm.fake_players import NimPlayer, NimState
from spadegym.redteam import RedTeamConfig
from spadegym.redteam.hunt import redteam_async

ARMS = {"redteam": {"designer": "mutation"}, "uniform": {"designer": "uniform", "avoid_known": False}}


def blind_spot(big: int):
    def weak(opening: NimState) -> bool:
        return (len(opening.piles) >= 3 and opening.max_take == 3) or max(opening.piles) >= big
    return weak


def run_arm(arm: str, seed: int, args: argparse.Namespace, url: str) -> dict[str, Any]:
    config = RedTeamConfig(target=f"openai:planted@{url}", families=args.families, budget=args.budget,
                           per_round=args.per_round, seed=seed, **ARMS[arm])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(redteam_async(config, Path(tmp) / "suite"))
        manifest = json.loads((Path(tmp) / "suite" / "manifest.json").read_text())
    clusters = sorted({c["cluster"] for c in manifest["cases"]})
    return {"arm": arm, "seed": seed, "proposals": result.proposals, "failed_levels": result.failures,
            "clusters": len(clusters), "clusters_per_100": round(100 * len(clusters) / max(1, result.proposals), 2),
            "minimal_failures": manifest["search"]["clusters"], "cluster_keys": clusters,
            # Proposals spent re-finding a known failure (failed levels beyond the first of each minimal failure).
            "repeats_per_100": round(100 * (result.failures - manifest["search"]["clusters"]) / max(1, result.proposals), 1),
            "episodes": manifest["search"]["episodes"], "validations": manifest["search"]["validations"],
            "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100, help="Proposals per arm and seed.")
    parser.add_argument("--per-round", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--families", nargs="+", default=["take_away"])
    parser.add_argument("--big", type=int, default=9, help="Blind spot: an opening pile of at least this many stones.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with FakeOpenAIServer(NimPlayer(blind_spot(args.big), on_opening=True)) as server:
        for seed in range(args.seeds):
            for arm in ARMS:
                row = run_arm(arm, seed, args, server.url)
                rows.append(row)
                print(f"seed {seed}  {arm:<8} proposals {row['proposals']:>4}  failed levels {row['failed_levels']:>4}  "
                      f"clusters {row['clusters']:>2} ({row['clusters_per_100']:.1f} per 100)  "
                      f"minimal failures {row['minimal_failures']:>2}  repeats {row['repeats_per_100']:.1f} per 100  "
                      f"{row['seconds']:.0f}s", flush=True)
    per_arm = {}
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        per_arm[arm] = {"clusters_per_100": round(statistics.mean(r["clusters_per_100"] for r in mine), 2),
                        "clusters_per_100_by_seed": [r["clusters_per_100"] for r in mine],
                        "failed_levels_per_100": round(statistics.mean(100 * r["failed_levels"] / r["proposals"]
                                                                       for r in mine), 1),
                        "repeats_per_100": round(statistics.mean(r["repeats_per_100"] for r in mine), 1),
                        "cluster_keys": sorted({k for r in mine for k in r["cluster_keys"]}),
                        "seconds": round(sum(r["seconds"] for r in mine), 1)}
    uniform = per_arm["uniform"]["clusters_per_100"]
    ratio = round(per_arm["redteam"]["clusters_per_100"] / uniform, 3) if uniform else None
    for arm, figures in per_arm.items():
        print(f"{arm:<8} {figures['clusters_per_100']:.2f} clusters per 100 proposals "
              f"(by seed {figures['clusters_per_100_by_seed']}), {figures['failed_levels_per_100']:.1f} failed levels "
              f"and {figures['repeats_per_100']:.1f} repeats of a known failure per 100, {figures['seconds']:.0f}s")
    print(f"ratio (red-team / uniform, distinct clusters per 100 proposals): {ratio}")
    if args.json:
        print(json.dumps({"ratio_clusters_vs_uniform": ratio, "arms": per_arm, "runs": rows,
                          "budget": args.budget, "seeds": args.seeds, "families": args.families, "big": args.big}))


if __name__ == "__main__":
    main()
