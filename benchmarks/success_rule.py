"""What the success rule changes: a win is the full reward, not any positive return.

Plays every built-in family level, the benchmark and test environments, and the
SPADE-style compatibility fixtures with the random agent, and counts the
episodes that the old rule (return > 0) and the new one (return = 1.0) judge
differently: those that end with partial terminal credit.

    python benchmarks/success_rule.py [--seeds 8] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from spadegym.agents.random_agent import RandomAgent
from spadegym.families import list_families
from spadegym.level import Level
from spadegym.rollout.runner import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"test fixtures": ROOT / "tests" / "fixtures" / "envs", "learner benchmark": ROOT / "tests" / "learner" / "envs",
           "reference fixtures": ROOT / "tests" / "fixtures" / "reference"}
# Choice-free text agents cannot play these; the random agent answers generically.
SKIP = {"textonly.py", "numpy_game.py"}


def specs() -> dict[str, dict[str, Level]]:
    groups: dict[str, dict[str, Level]] = {"families": {}}
    for family in list_families():
        for level in range(family.max_level + 1):
            env_id = f"{family.name}@{level}"
            groups["families"][env_id] = Level(family.render(family.level_knobs(level)))
    for group, folder in FOLDERS.items():
        groups[group] = {p.stem: Level(p.read_text())
                         for p in sorted(folder.glob("*.py")) if p.name not in SKIP}
    return groups


def measure(seeds: int) -> dict[str, dict[str, float]]:
    out = {}
    with Sandbox() as sandbox:
        for group, envs in specs().items():
            plays = [Play(env_id, seed) for env_id in envs for seed in range(seeds)]
            episodes = asyncio.run(run_episodes(sandbox, envs, plays, RandomAgent(seed=0),
                                                RolloutConfig(concurrency=32)))
            scored = [e for e in episodes if e.scored]
            old = sum(e.ret > 0 for e in scored)
            new = sum(e.success for e in scored)
            out[group] = {"environments": len(envs), "episodes": len(scored), "wins_old_rule": old,
                          "wins_new_rule": new, "partial_credit_episodes": sum(0 < e.ret < 1 for e in scored),
                          "mean_return": round(sum(e.ret for e in scored) / max(1, len(scored)), 4),
                          "envs_changed": sorted({e.env_id for e in scored if 0 < e.ret < 1})}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="Episodes per environment (seeds 0..N-1).")
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    args = parser.parse_args()
    result = measure(args.seeds)
    if args.json:
        print(json.dumps(result))
        return
    for group, r in result.items():
        print(f"{group:<19} {r['environments']:>3} envs {r['episodes']:>4} random episodes: wins "
              f"{r['wins_old_rule']} (return > 0) -> {r['wins_new_rule']} (full reward); mean return "
              f"{r['mean_return']:.3f}; changed: {', '.join(r['envs_changed']) or 'none'}")


if __name__ == "__main__":
    main()
