"""The fixed held-out suite: built-in family instances at every level, on seeds never trained on.

It measures what the curriculum is for: does the agent get better at tasks it
was not handed? Seeds come from a stream (``"heldout"``) that training never
draws from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..agents.base import Agent
from ..executor import EnvHost, FileHost
from ..families import difficulty_index, list_families
from ..level import Level
from ..rollout import Episode, Play, RolloutConfig, derive_seed, run_episodes


@dataclass
class HeldoutEnv:
    env_id: str
    family: str
    level: int
    difficulty: float
    spec: Level


def build_suite(levels: str = "all", families: list[str] | None = None) -> list[HeldoutEnv]:
    """One environment per family level (``ends``: only the easiest and hardest; ``easiest``: level 0),
    of every family or of those named."""
    suite = []
    for family in list_families():
        if families and family.name not in families:
            continue
        chosen = {"all": range(family.max_level + 1), "ends": sorted({0, family.max_level}),
                  "easiest": [0]}[levels]
        for level in chosen:
            knobs = family.level_knobs(level)
            env_id = f"heldout-{family.name}-L{level}"
            spec = Level(family.render(knobs))
            suite.append(HeldoutEnv(env_id, family.name, level, difficulty_index(family.name, knobs) or 0.0, spec))
    return suite


def heldout_plays(suite: list[HeldoutEnv], *, seeds: int, seed: int, hint: bool) -> list[Play]:
    """The plays of an evaluation: ``seeds`` instances of each suite level, without (and with) the hint."""
    arms = (False, True) if hint else (False,)
    return [Play(h.env_id, derive_seed(seed, "heldout", h.env_id, i), hinted=arm)
            for h in suite for i in range(seeds) for arm in arms]


async def evaluate(agent: Agent, sandbox: EnvHost | FileHost, suite: list[HeldoutEnv], *, seeds: int, seed: int,
                   hint: bool = True, rollout: RolloutConfig | None = None,
                   on_episode: Callable[[Episode], None] | None = None) -> tuple[dict[str, Any], list[Episode]]:
    """Success rates on the suite, without (and with) the hint, overall, per family and per level; and the episodes."""
    envs = {h.env_id: h.spec for h in suite}
    plays = heldout_plays(suite, seeds=seeds, seed=seed, hint=hint)
    episodes = await run_episodes(sandbox, envs, plays, agent, rollout, on_episode=on_episode)
    wins: dict[tuple[str, bool], list[float]] = defaultdict(list)
    for play, ep in zip(plays, episodes):
        if ep.scored:
            wins[(play.env_id, play.hinted)].append(float(ep.success))
    def rate(env_id: str, hinted: bool) -> float | None:
        values = wins[(env_id, hinted)]
        return float(np.mean(values)) if values else None

    plain = [(h, rate(h.env_id, False)) for h in suite]
    by_family: dict[str, list[float]] = defaultdict(list)
    by_level: dict[int, list[float]] = defaultdict(list)
    for h, value in plain:
        if value is not None:
            by_family[h.family].append(value)
            by_level[h.level].append(value)
    scored = [v for _, v in plain if v is not None]
    result: dict[str, Any] = {
        "heldout_success": float(np.mean(scored)) if scored else 0.0,
        "heldout_by_family": {k: round(float(np.mean(v)), 4) for k, v in sorted(by_family.items())},
        "heldout_by_level": {str(k): round(float(np.mean(v)), 4) for k, v in sorted(by_level.items())},
        "heldout_episodes": len(episodes),
    }
    hard = [v for h, v in plain if v is not None and h.difficulty >= 0.5]
    if hard:
        result["heldout_success_hard"] = float(np.mean(hard))
    if hint:
        hinted = [v for v in (rate(h.env_id, True) for h in suite) if v is not None]
        result["heldout_success_hint"] = float(np.mean(hinted)) if hinted else 0.0
    return result, episodes
