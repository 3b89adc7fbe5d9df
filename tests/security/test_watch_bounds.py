"""The reward-hacking watch keeps a fixed-size summary of each level, whatever the level prints: a level whose
observations run to a hundred thousand lines, or whose episodes run to thousands of turns, costs the run's saved
watch state no more than a small one."""

from __future__ import annotations

import json

from spadegym.rollout import Episode
from spadegym.rollout.records import Turn
from spadegym.signals import EnvStats
from spadegym.watch import Watch


def probe_plays(watch: Watch, lines: int, turns: int) -> list[Episode]:
    """Probe plays at every probe seed of a level that prints ``lines`` lines a turn for ``turns`` turns."""
    screen = "\n".join(f"row {i}: {'#' * (i % 7)}.{'.' * (i % 5)} ({i}, {i * 3})" for i in range(lines))
    return [Episode("big", seed, hinted=False, final_observation=screen, ret=float(policy), terminated=True,
                    turns=[Turn(f"{screen}\nturn {t}", f"\\boxed{{{t}}}", str(t), valid_actions=["a", "b"])
                           for t in range(turns)])
            for seed in watch.seeds for policy in (0, 1)]


def saved_size(lines: int, turns: int) -> int:
    watch = Watch(seed=0)
    probes = probe_plays(watch, lines, turns)
    watch.observe(1, [], probes, {"big": "honest"}, {"big": "class BigEnv: ..."},
                  {"big": EnvStats(0.5, 0.5, 0.5, 0.5, plays=8, plays_hint=8)})
    return len(json.dumps(watch.state_dict()))


def test_watch_state_of_a_level_does_not_grow_with_its_observation_lines() -> None:
    small, huge = saved_size(lines=10, turns=2), saved_size(lines=30_000, turns=2)
    assert huge < 20_000 and huge - small < 2_000, (small, huge)


def test_watch_state_of_a_level_does_not_grow_with_its_turns() -> None:
    small, long = saved_size(lines=3, turns=5), saved_size(lines=3, turns=2_000)
    assert long < 20_000, (small, long)
