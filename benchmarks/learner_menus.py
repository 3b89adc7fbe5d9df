"""The learner on the longest menus the sandbox allows: memory and time per decision, with and without its view budget.

    python benchmarks/learner_menus.py [--json] [--episodes N] [--turns T]

Plays ``tests/fixtures/hostile/learner_menus.py`` (a fresh menu of 4,096
actions, 57,344 characters, each turn, under a 300-line observation; it passes
the gate) with the built-in learner, N hinted episodes of T turns, then one
update; once with the default ``learner.view_entries`` and once with no budget
(what the learner did before it had one), in this process. Figures per arm:

- view_entries: feature entries of the largest view (~12 bytes each);
- view_build_ms: building one view of a fresh menu (median of the turns);
- play_peak_mb / update_peak_mb: the most memory traced (tracemalloc: Python
  and numpy) while playing the episodes / while training on them;
- and the ratios unbounded / budgeted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import tracemalloc
from pathlib import Path

from spadegym.agents.learner import Featurizer, make_learner
from spadegym.agents.learner.features import VIEW_ENTRIES
from spadegym.rollout.play import play_file
from spadegym.sandbox import Sandbox, SandboxConfig

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "hostile" / "learner_menus.py"
UNBOUNDED = 1 << 40


def _views(turns: int, config: SandboxConfig) -> list[tuple[str, list[str]]]:
    """(observation, menu) of the fixture's first turns, played through the sandbox."""
    with Sandbox(config) as sandbox:
        env = sandbox.open(FIXTURE.read_text(), FIXTURE.name)
        outcome = env.reset(seed=0, want=["valid_actions"])
        views = []
        for _ in range(turns):
            views.append((outcome.value["observation"], outcome.value["valid_actions"]))
            outcome = env.step("wrong", want=["valid_actions"])
        env.close()
    return views


def measure(view_entries: int, episodes: int, turns: int) -> dict[str, float]:
    config = SandboxConfig(seccomp=False, landlock=False, namespaces=False, max_episode_turns=turns)
    builds, largest = [], 0
    for observation, menu in _views(turns, config):
        featurizer = Featurizer(view_entries=view_entries)
        started = time.perf_counter()
        largest = max(largest, featurizer.view(observation, menu).size)
        builds.append(time.perf_counter() - started)
    learner = make_learner(seed=0, config={"view_entries": view_entries})
    tracemalloc.start()
    played = asyncio.run(play_file(FIXTURE, learner, episodes=episodes, hinted=True, sandbox_config=config))
    play_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    learner.update(played)
    update_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"view_entries": largest, "view_build_ms": round(1000 * statistics.median(builds), 1),
            "play_peak_mb": round(play_peak / 1e6, 1), "update_peak_mb": round(update_peak / 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    budgeted = measure(VIEW_ENTRIES, args.episodes, args.turns)
    unbounded = measure(UNBOUNDED, args.episodes, args.turns)
    result = {"episodes": args.episodes, "turns": args.turns, "budget": VIEW_ENTRIES,
              "budgeted": budgeted, "unbounded": unbounded,
              "ratio_unbounded_over_budgeted": {k: round(unbounded[k] / budgeted[k], 1) for k in budgeted}}
    if args.json:
        print(json.dumps(result))
        return
    print(f"learner on {FIXTURE.name}: {args.episodes} hinted episodes x {args.turns} turns, then one update")
    print(f"{'':16}{'budgeted':>12}{'unbounded':>12}{'ratio':>8}")
    for key in budgeted:
        print(f"{key:16}{budgeted[key]:>12}{unbounded[key]:>12}{result['ratio_unbounded_over_budgeted'][key]:>8}")


if __name__ == "__main__":
    main()
