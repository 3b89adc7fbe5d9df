"""The built-in learner: training throughput in the sandbox, and learning curves.

Figures:
- throughput: episodes/s and decisions (steps)/s of ``train`` through the real
  sandbox (lockstep batches, updates included, evaluations excluded), and the
  learner's own compute (views/s scored in ``act``, decisions/s in ``update``);
- curves: success on held-out seeds without / with the hint, for
  ``lights`` (learnable without the hint), ``arithmetic`` (only the hint names
  the answer) and ``keydoor`` (4x4 key-and-door navigation), trained together
  with half of the plays hinted; then two environments never trained on, to
  show that hint-following transfers: ``beacon`` (the hint names the action,
  as in the training games) and ``vault`` (the hint names only the word that
  sets the action apart: ``say amber`` from ``the code word is amber``);
- keydoor alone without hinted training: navigation learnt from outcome
  rewards only (random play wins 3% of the instances).

The environments are the small files in tests/learner/envs/.

    python benchmarks/learner.py            # tables
    python benchmarks/learner.py --json     # one JSON object
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from cpu_time import tree_cpu_s
from rich.console import Console
from rich.table import Table

from spadegym.agents.base import View
from spadegym.agents.learner import Learner, LearnerConfig, evaluate, train
from spadegym.level import Level
from spadegym.rollout.records import Episode, Turn
from spadegym.sandbox import Sandbox

ENVS = Path(__file__).resolve().parent.parent / "tests" / "learner" / "envs"


def specs(*names: str) -> dict[str, Level]:
    return {n: Level((ENVS / f"{n}.py").read_text()) for n in names}


def throughput(sandbox: Sandbox, names: tuple[str, ...], episodes: int, batch_envs: int) -> dict[str, Any]:
    """Wall rate, and CPU per episode: this process (the learner and the episode loop) and the whole tree
    (its sandbox workers too). On a shared machine the wall rate follows the load; the CPU does not."""
    learner = Learner(LearnerConfig(seed=0))
    steps = []
    host, tree = time.process_time(), tree_cpu_s(sandbox)
    start = time.perf_counter()
    train(learner, sandbox, specs(*names), episodes=episodes, batch_envs=batch_envs,
          on_update=lambda s: steps.append(s["steps"]))
    seconds = time.perf_counter() - start
    host, tree = time.process_time() - host, tree_cpu_s(sandbox) - tree
    return {"envs": list(names), "episodes": episodes, "batch_episodes": batch_envs * 8,
            "seconds": round(seconds, 2), "episodes_per_s": round(episodes / seconds),
            "steps_per_s": round(sum(steps) / seconds),
            "host_cpu_ms_per_episode": round(1000 * host / episodes, 3),
            "tree_cpu_ms_per_episode": round(1000 * tree / episodes, 3),
            "load_average_1min": round(os.getloadavg()[0], 1)}


def learner_compute() -> dict[str, Any]:
    """The learner alone (no sandbox): batched scoring and updates on key-and-door-like views."""
    learner = Learner(LearnerConfig(seed=0))
    actions = ["up", "down", "left", "right", "open door"]
    obs = [f"You move.\nposition: {i % 4} {i // 4 % 4}\nkey: {i // 16 % 4} {i // 64 % 4}\ndoor: 3 {i % 3}"
           for i in range(256)]
    views = [View(str(i), o, valid_actions=actions) for i, o in enumerate(obs)]
    asyncio.run(learner.act(views))  # warm the feature cache, as repeated states do in training
    start, rounds = time.perf_counter(), 40
    for _ in range(rounds):
        asyncio.run(learner.act(views))
    act_rate = rounds * len(views) / (time.perf_counter() - start)
    episodes = []
    for g in range(64):
        for k in range(8):
            ep = Episode(env_id="kd", seed=g, hinted=False, group=g, terminated=True, ret=float(k == 0))
            ep.turns = [Turn(obs[(g * 8 + k + t) % 256], a, a, valid_actions=actions)
                        for t, a in enumerate(actions * 3)]
            episodes.append(ep)
    learner.update(episodes)
    start, rounds = time.perf_counter(), 5
    for _ in range(rounds):
        stats = learner.update(episodes)
    update_rate = rounds * stats["steps"] / (time.perf_counter() - start)
    return {"act_views_per_s": round(act_rate), "update_decisions_per_s": round(update_rate)}


def curves(sandbox: Sandbox, episodes: int, keydoor_episodes: int, seed: int) -> dict[str, Any]:
    learner = Learner(LearnerConfig(seed=seed))
    curve = train(learner, sandbox, specs("lights", "arithmetic", "keydoor"), episodes=episodes,
                  eval_every=max(1, episodes // 8), eval_seeds=64, hint_fraction=0.5, seed=seed)
    unseen = evaluate(learner, sandbox, specs("beacon", "vault"), seeds=64, seed=seed + 1)
    alone = Learner(LearnerConfig(seed=seed))
    keydoor = train(alone, sandbox, specs("keydoor"), episodes=keydoor_episodes,
                    eval_every=max(1, keydoor_episodes // 8), eval_seeds=128, hint_fraction=0.0, seed=seed)
    return {"curve": curve, "unseen": unseen, "keydoor_no_hint_training": keydoor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16384, help="Training episodes for the curves.")
    parser.add_argument("--keydoor-episodes", type=int, default=16384, help="Episodes for keydoor alone.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    parser.add_argument("--throughput-only", action="store_true", help="Only the throughput figures (no curves).")
    args = parser.parse_args()
    with Sandbox() as sandbox:
        report = {
            "throughput": [throughput(sandbox, ("keydoor",), 4096, 16),
                           throughput(sandbox, ("lights", "arithmetic"), 8192, 32)],
            "compute": learner_compute(),
        }
        if args.throughput_only:
            print(json.dumps(report))
            return
        report.update(curves(sandbox, args.episodes, args.keydoor_episodes, args.seed))
    if args.json:
        print(json.dumps(report))
        return
    console = Console()
    table = Table(title="training throughput (sandbox, lockstep, updates included)", title_justify="left")
    for col in ("envs", "episodes", "batch", "seconds", "episodes/s", "steps/s", "host CPU ms/ep", "tree CPU ms/ep"):
        table.add_column(col, justify="left" if col == "envs" else "right")
    for t in report["throughput"]:
        table.add_row(",".join(t["envs"]), str(t["episodes"]), str(t["batch_episodes"]), str(t["seconds"]),
                      str(t["episodes_per_s"]), str(t["steps_per_s"]), str(t["host_cpu_ms_per_episode"]),
                      str(t["tree_cpu_ms_per_episode"]))
    console.print(table)
    console.print(f"learner compute alone: {report['compute']['act_views_per_s']} views/s scored in act, "
                  f"{report['compute']['update_decisions_per_s']} decisions/s in update")
    table = Table(title="learning curve: success without / with hint (held-out seeds)", title_justify="left")
    table.add_column("episodes", justify="right")
    table.add_column("seconds", justify="right")
    names = list(report["curve"][0]["envs"])
    for name in names:
        table.add_column(name, justify="right")
    for point in report["curve"]:
        table.add_row(str(point["episodes"]), f"{point['seconds']:.1f}",
                      *(f"{point['envs'][n]['success']:.2f} / {point['envs'][n]['success_hint']:.2f}" for n in names))
    console.print(table)
    for name, unseen in report["unseen"].items():
        console.print(f"unseen env '{name}': {unseen['success']:.2f} without hint, "
                      f"{unseen['success_hint']:.2f} with hint")
    points = ", ".join(f"{p['episodes']}: {p['envs']['keydoor']['success']:.2f}"
                       for p in report["keydoor_no_hint_training"])
    console.print(f"keydoor alone, no hinted training (episodes: success): {points}")


if __name__ == "__main__":
    main()
