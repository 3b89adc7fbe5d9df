"""Held-out suites: what the agent is measured on, never trained on.

It measures what the curriculum is for: does the agent get better at tasks it
was not handed? Seeds come from a stream (``"heldout"``) that training never
draws from, and each suite holds out more than the seeds:

    in_distribution   the training families at their listed levels (what a fixed pool of all levels trains on)
    frontier          the training families one and two steps past their hardest listed level (each family's
                      extension): no fixed pool and no fresh draw holds them
    edge_cases        the training families' listed levels with the held-out slice of every variation
                      dimension (wording, layout, line order, action names, menu order, start, step cost):
                      no training draw ever uses those choices (``families.variation``)
    unseen_families   one family per skill held out of every arm's training and every designer's edit
                      space (``unseen_families``; rotated over run seeds by default)
    path              environment files a user names (``heldout.path``): a run on the user's own pool or
                      source is measured on the user's own held-out tasks

A round line and the report show each suite's success; ``heldout_success``
(and its hint, family and level figures) is the first suite's.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.base import Agent
from ..errors import UserError
from ..executor import EnvHost, FileHost
from ..families import SKILLS, difficulty_index, get_family, list_families
from ..families.variation import held_out_variation
from ..level import Level
from ..rollout import Episode, Play, RolloutConfig, derive_seed, run_episodes

BUILT_IN_SUITES = ("in_distribution", "frontier", "edge_cases", "unseen_families")
SUITES = (*BUILT_IN_SUITES, "path")
#: How far past a family's hardest listed level the frontier suite goes.
FRONTIER_STEPS = (1, 2)
#: The round-line and report names of the suites.
SHORT_NAMES = {"in_distribution": "in", "frontier": "frontier", "edge_cases": "edge", "unseen_families": "unseen",
               "path": "path"}


@dataclass
class HeldoutEnv:
    env_id: str
    family: str | None
    level: int
    difficulty: float
    spec: Level
    suite: str = "in_distribution"


def check_suites(names: Sequence[str]) -> list[str]:
    """The suite names, each known (an unknown one names the nearest); raises ValueError."""
    for name in names:
        if name not in SUITES:
            near = difflib.get_close_matches(name, SUITES, n=1)
            tip = f"did you mean {near[0]!r}? " if near else ""
            raise ValueError(f"unknown held-out suite {name!r}; {tip}suites: {', '.join(SUITES)}")
    return list(dict.fromkeys(names))


def unseen_families(choice: str | Sequence[str], seed: int, keep: Sequence[str] = (),
                    skills: Sequence[str] = SKILLS) -> list[str]:
    """The families held out of training: ``"rotate"`` holds out one per skill of ``skills`` (the run's
    setting), the ``seed``-th (mod the skill's count) of its families by name that ``keep`` does not name,
    so each seed holds out others, and none of a skill with a single family; where every skill has a
    single family (the tool-use setting), the ``seed``-th of the setting's families, so the suite is
    never empty while two can train; a list names them; [] none."""
    if isinstance(choice, str):
        out = []
        for skill in skills:
            names = sorted(f.name for f in list_families(skill) if f.name not in keep)
            if len(names) > 1:  # a skill's only family stays in training
                out.append(names[seed % len(names)])
        if not out:
            names = sorted(f.name for skill in skills for f in list_families(skill) if f.name not in keep)
            if len(names) > 1:
                out.append(names[seed % len(names)])
        return out
    for name in choice:
        get_family(name)  # an unknown name raises with the nearest known one
    return list(choice)


def build_suite(levels: str = "all", families: list[str] | None = None, *, suite: str = "in_distribution",
                exclude: Sequence[str] = ()) -> list[HeldoutEnv]:
    """One environment per family level of a built-in suite (``ends``: only the easiest and hardest listed
    levels; ``easiest``: level 0), of every family or of those named; ``exclude``: families left out
    (the unseen ones, for every suite but ``unseen_families``, which holds only them)."""
    out = []
    for family in list_families():
        if (families and family.name not in families) or \
                ((family.name in exclude) != (suite == "unseen_families")):
            continue
        if suite == "frontier":
            chosen = [family.max_level + k for k in FRONTIER_STEPS]
        else:
            chosen = {"all": list(range(family.max_level + 1)), "ends": sorted({0, family.max_level}),
                      "easiest": [0]}[levels]
        for level in chosen:
            knobs = family.level_knobs(level)
            if suite == "edge_cases":
                knobs.update(held_out_variation())
            tag = "" if suite == "in_distribution" else f"{suite}-"
            env_id = f"heldout-{tag}{family.name}-L{level}"
            spec = Level(family.render(knobs))
            out.append(HeldoutEnv(env_id, family.name, level, difficulty_index(family.name, knobs) or 0.0, spec, suite))
    return out


def path_suite(path: str | Path) -> list[HeldoutEnv]:
    """The environment files under ``path`` (a file or a directory, searched recursively), one level each."""
    from ..designers.pool import pool_files
    from ..envfile import SourceError, read_source

    root = Path(path)
    out = []
    for file in pool_files(path, "heldout.path"):
        try:
            source = read_source(file)
        except SourceError as exc:
            raise UserError(f"heldout.path: {exc}") from None
        name = file.relative_to(root).with_suffix("").as_posix() if root.is_dir() else file.stem
        env_id = f"heldout-path-{name.replace('/', '-')}"
        out.append(HeldoutEnv(env_id, None, 0, 0.0, Level(source), "path"))
    return out


def build_suites(suites: Sequence[str], *, levels: str = "all", families: list[str] | None = None,
                 unseen: Sequence[str] = (), path: str | Path | None = None) -> list[HeldoutEnv]:
    """Every environment of the named suites, in their order."""
    out: list[HeldoutEnv] = []
    for suite in suites:
        if suite == "path":
            if path is None:
                raise UserError("the held-out suite 'path' needs heldout.path: the folder of environment files to "
                                "measure on.")
            out += path_suite(path)
        else:
            out += build_suite(levels, families, suite=suite, exclude=unseen)
    return out


def heldout_plays(suite: list[HeldoutEnv], *, seeds: int, seed: int, hint: bool,
                  primary: str | None = None) -> list[Play]:
    """The plays of an evaluation: ``seeds`` instances of each suite level without the hint, and with it for the
    levels of the ``primary`` suite (default: the first present)."""
    primary = primary or (suite[0].suite if suite else "in_distribution")
    return [Play(h.env_id, derive_seed(seed, "heldout", h.env_id, i), hinted=arm)
            for h in suite for i in range(seeds) for arm in ((False, True) if hint and h.suite == primary else (False,))]


async def evaluate(agent: Agent, sandbox: EnvHost | FileHost, suite: list[HeldoutEnv], *, seeds: int, seed: int,
                   hint: bool = True, rollout: RolloutConfig | None = None, primary: str | None = None,
                   on_episode: Callable[[Episode], None] | None = None) -> tuple[dict[str, Any], list[Episode]]:
    """Success rates without the hint on every suite present, and for the ``primary`` suite (default: the first
    present) also with the hint, per family and per level; and the episodes."""
    primary = primary or (suite[0].suite if suite else "in_distribution")
    envs = {h.env_id: h.spec for h in suite}
    plays = heldout_plays(suite, seeds=seeds, seed=seed, hint=hint, primary=primary)
    episodes = await run_episodes(sandbox, envs, plays, agent, rollout, on_episode=on_episode)
    wins: dict[tuple[str, bool], list[float]] = defaultdict(list)
    for play, ep in zip(plays, episodes):
        if ep.scored:
            wins[(play.env_id, play.hinted)].append(float(ep.success))

    def rate(env_id: str, hinted: bool) -> float | None:
        values = wins[(env_id, hinted)]
        return float(np.mean(values)) if values else None

    def mean(values: list[float | None]) -> float:
        kept = [v for v in values if v is not None]
        return float(np.mean(kept)) if kept else 0.0

    main = [h for h in suite if h.suite == primary]
    plain = [(h, rate(h.env_id, False)) for h in main]
    by_family: dict[str, list[float]] = defaultdict(list)
    by_level: dict[int, list[float]] = defaultdict(list)
    for h, value in plain:
        if value is not None:
            by_family[h.family or h.env_id.removeprefix("heldout-path-")].append(value)
            by_level[h.level].append(value)
    by_suite = {name: round(mean([rate(h.env_id, False) for h in suite if h.suite == name]), 4)
                for name in dict.fromkeys(h.suite for h in suite)}
    result: dict[str, Any] = {
        "heldout_success": mean([v for _, v in plain]),
        "heldout_by_suite": by_suite,
        "heldout_by_family": {k: round(float(np.mean(v)), 4) for k, v in sorted(by_family.items())},
        "heldout_by_level": {str(k): round(float(np.mean(v)), 4) for k, v in sorted(by_level.items())},
        "heldout_episodes": len(episodes),
    }
    hard = [v for h, v in plain if v is not None and h.difficulty >= 0.5]
    if hard:
        result["heldout_success_hard"] = float(np.mean(hard))
    if hint:
        result["heldout_success_hint"] = mean([rate(h.env_id, True) for h in main])
    return result, episodes


def due_suites(suites: Sequence[str], n: int, rounds: int, every: int, suites_every: int) -> list[str]:
    """The suites round ``n`` of ``rounds`` evaluates: all at the last round and at the end of every
    ``suites_every`` rounds (0: only at the end), the first one also every ``every`` rounds (0: only at the end)."""
    if n + 1 >= rounds or (suites_every and (n + 1) % suites_every == 0):
        return list(suites)
    if every and n % every == 0:
        return list(suites[:1])
    return []
