"""Which change of a game defeats an agent? Held-out success per variation dimension, one change at a time.

The curriculum benchmark's edge-case suite renders the held-out slice of every
variation dimension at once, so an agent that fails it could fail on any one of
them. This benchmark takes the training families' listed levels (the
in-distribution suite) and changes one dimension of them at a time
(``spadegym.families.variation``): to a choice no training draw uses
(``held_out``) and to a training choice that is not the listed one
(``training``: what a curriculum's ``vary`` edits can teach and a fixed pool of
listed levels never plays), and to every held-out choice at once (the edge case),
also with the listed words (``all_but_words``: what of the edge case's cost is
its words). Every variant of a level is played on the same
reset seeds as the listed level, so each figure is paired with the listed one
by level; the interval is a 95% t interval over the levels.

    python benchmarks/transfer.py --agent learner:RUN --agent random --json
    python benchmarks/transfer.py --agent learner:ADAPTIVE_RUN --agent learner:FIXED_RUN --seeds 16

``--run-seed`` names the run seed whose unseen families are left out (the
families a run of that seed trains on; default 0, the default run's). The JSON
line also gives each variant's success per family (``by_family``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from typing import Any

import numpy as np
from curriculum import paired
from rich.console import Console
from rich.table import Table

from spadegym.agents.registry import AGENTS
from spadegym.cli.agent_settings import agent_options, check_settings_apply, settings_for
from spadegym.errors import UserError
from spadegym.families import difficulty_index, get_family
from spadegym.families.variation import DIMENSIONS, dimension, held_out_variation
from spadegym.level import Level
from spadegym.loop import RunConfig
from spadegym.loop.agent import build_agent
from spadegym.loop.heldout import HeldoutEnv, build_suite
from spadegym.rollout import Play, derive_seed, run_episodes
from spadegym.sandbox import Sandbox

HELDOUT_SEED = 4242  # the curriculum benchmark's held-out instances


def variants() -> dict[str, dict[str, Any]]:
    """Each variant's name -> the knobs it sets: the listed game, one dimension changed, every held-out one."""
    out: dict[str, dict[str, Any]] = {"listed": {}}
    for dim in DIMENSIONS:
        others = [c for c in dim.training if c != dim.default]
        if others:
            out[f"{dim.name}:training"] = {dim.name: others[-1]}
        if dim.held_out:
            out[f"{dim.name}:held_out"] = {dim.name: dim.held_out[0]}
    out["all:held_out"] = held_out_variation()
    # The edge case with the listed words: how much of its cost is words (phrasing, verbs) and how much the rest.
    out["all_but_words:held_out"] = {**held_out_variation(), **{n: dimension(n).default for n in ("phrasing", "verbs")}}
    return out


def suite_of(run_seed: int) -> tuple[list[HeldoutEnv], dict[str, tuple[str, str]]]:
    """Every variant of every listed level of the run seed's training families, and each env's (variant, base)."""
    base = build_suite(exclude=RunConfig(seed=run_seed).training_exclusions())
    envs, owner = [], {}
    for h in base:
        family = get_family(h.family)
        for name, change in variants().items():
            knobs = {**family.level_knobs(h.level), **change}
            env_id = f"{h.env_id}--{name}"
            envs.append(HeldoutEnv(env_id, h.family, h.level, difficulty_index(h.family, knobs) or 0.0,
                                   Level(family.render(knobs)), name))
            owner[env_id] = (name, h.env_id)
    return envs, owner


def measure(spec: str, sets: list[str], envs: list[HeldoutEnv], owner: dict[str, tuple[str, str]],
            seeds: int, heldout_seed: int) -> dict[str, Any]:
    """The agent's success per variant, and its difference from the listed game paired by level."""
    config = RunConfig()
    parsed = AGENTS.parse(spec)
    agent = build_agent(parsed, seed=0, **agent_options(parsed, settings_for(parsed, sets)))
    # A variant plays its base level's reset seeds: the same instances as the listed game.
    plays = [Play(h.env_id, derive_seed(heldout_seed, "heldout", owner[h.env_id][1], i)) for h in envs
             for i in range(seeds)]
    with Sandbox(config.sandbox) as box:
        episodes = asyncio.run(run_episodes(box, {h.env_id: h.spec for h in envs}, plays, agent, config.rollout))
    family = {h.env_id: h.family for h in envs}
    wins: dict[tuple[str, str], list[float]] = defaultdict(list)
    family_wins: dict[tuple[str, str], list[float]] = defaultdict(list)
    for play, ep in zip(plays, episodes):
        if ep.scored:
            wins[owner[play.env_id]].append(float(ep.success))
            family_wins[(owner[play.env_id][0], family[play.env_id])].append(float(ep.success))
    rate = {key: float(np.mean(v)) for key, v in wins.items()}
    levels = sorted({base for _, base in owner.values()})
    out: dict[str, Any] = {}
    for name in variants():
        pairs = [(rate[(name, b)], rate[("listed", b)]) for b in levels if (name, b) in rate and ("listed", b) in rate]
        entry: dict[str, Any] = {"success": round(float(np.mean([v for v, _ in pairs])), 4) if pairs else None}
        # A mean over twelve families can hide one that moved a lot among eleven that did not.
        entry["by_family"] = {f: round(float(np.mean(v)), 4) for (n, f), v in sorted(family_wins.items()) if n == name}
        if name != "listed" and len(pairs) > 1:
            diff = paired([v for v, _ in pairs], [listed for _, listed in pairs])
            entry["vs_listed"], entry["vs_listed_ci95"] = diff["mean"], diff["ci95"]
        out[name] = entry
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", required=True,
                        help="An agent spec (repeatable): learner:RUN, random, hf:PATH, openai:MODEL@URL, ...")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="An agent setting (train.* for hf:, learner.* for learner, ...), as `spadegym eval`.")
    parser.add_argument("--seeds", type=int, default=16, help="Reset seeds per level (each variant plays the same).")
    parser.add_argument("--heldout-seed", type=int, default=HELDOUT_SEED)
    parser.add_argument("--run-seed", type=int, default=0, help="Leave out this run seed's unseen families.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    check_settings_apply([AGENTS.parse(a) for a in args.agent], args.set)  # a setting no agent reads is an error, as in `spadegym eval`
    envs, owner = suite_of(args.run_seed)
    results = {spec: measure(spec, args.set, envs, owner, args.seeds, args.heldout_seed) for spec in args.agent}
    table = Table(title=f"held-out success, one change at a time ({len(envs) // len(variants())} listed levels, "
                        f"{args.seeds} seeds each)")
    table.add_column("variant")
    for spec in args.agent:
        table.add_column(spec, justify="right")
    for name in variants():
        cells = []
        for spec in args.agent:
            r = results[spec][name]
            ci = r.get("vs_listed_ci95")
            cells.append(f"{r['success']:.3f}" + (f"  {r['vs_listed']:+.3f} ({ci[0]:+.3f}..{ci[1]:+.3f})" if ci else ""))
        table.add_row(name, *cells)
    Console(stderr=True).print(table)
    if args.json:
        print(json.dumps({"agents": results, "seeds": args.seeds, "run_seed": args.run_seed,
                          "heldout_seed": args.heldout_seed}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:  # a bad spec or setting: one sentence, no traceback
        sys.exit(f"transfer.py: {exc}")
