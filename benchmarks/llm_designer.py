"""An LLM designer that edits levels, trained by GRPO on its designer reward: SmolLM2-135M on the CPU, offline.

The environment as a trainable component on a small model. The designer is the
``hf:`` designer in ``edit`` mode (``llm_designer.mode = "edit"``): it reads a
parent level (family, knobs, variation, the agent's win rates and regret, the
band verdict, the values its family's edit space allows) and replies with a
structured edit, held to the edit's form by a grammar over its tokens. The agent
is the built-in learner, trained first on the families' easiest levels and then
frozen, so an edit's designer reward depends on the edit alone.

Part ``edit`` (the default):

1. the learner trains on levels 0-1 of the families (half its plays hinted), then is frozen;
2. parent contexts: levels 0-3 of each family in three random training variations, each measured
   (the gate, then ``--plays`` no-hint and ``--hint-plays`` hinted plays); one variation of
   ``--eval-contexts`` (family, level) cells is the evaluation set, the other two the training set;
3. before: on every evaluation context, ``--edits`` edits sampled from the untrained model, each
   rendered, judged by the gate and measured: valid-edit rate, designer reward (the run's default,
   ``blend``; an invalid edit counts 0, the blend's floor), share of edits whose no-hint win rate
   lands in the learnable band (0.2-0.8);
4. ``--steps`` GRPO steps: each step, ``--train-contexts`` training parents x ``--edits`` edits
   (one GRPO group per parent: advantages are the rewards z-scored within the parent's edits;
   invalid edits earn less than any valid one), one update through TRL;
5. after: step 3 again with the trained model, on the same contexts from the same random stream;
6. baselines on the same contexts: the mutation designer (its default settings, limited to the
   parent's family) proposing ``--edits`` levels from the parent (most of them fresh draws of the
   family's easiest level, which no edit of the parent can be), and its edits of the parent alone
   (``band_share_mutation_edits``, on the parents it can edit: none is easier than a family's easiest
   level); uniform single steps of the edit space; and the untrained model without the grammar (how
   valid a free reply is).

Each level is measured once (cached by its code), with the same instance seeds whoever proposed
it, so before, after and the baselines share their measurement noise, and the paired intervals
(per context, after minus before; after minus the mutation designer) are those of the designers.

Part ``both``: one SmolLM2 in both roles on shared weights (the ``hf:`` agent and the ``hf:``
designer in edit mode) in the real loop, beside a pool of the held-out level's renders; held-out
success of the agent before and after on the same instances, and each role's GRPO steps.

    python benchmarks/llm_designer.py --json                  # the edit part (see benchmarks/README.md for its time)
    python benchmarks/llm_designer.py --steps 1 --eval-contexts 2 --train-contexts 2 --edits 4 --learner-episodes 200   # a smoke run
    python benchmarks/llm_designer.py --part both --json      # both roles on shared weights
    python benchmarks/llm_designer.py --part reach --out DIR  # no model: the band share of fixed kinds of edit
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import resource
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from spadegym.agents.learner.agent import Learner, make_learner
from spadegym.agents.learner.trainer import train as train_learner
from spadegym.designers.base import Candidate, DesignContext, Feedback, LevelSummary
from spadegym.designers.edit_mode import side
from spadegym.designers.hf import HFDesigner
from spadegym.designers.llm_config import LLMDesignerConfig
from spadegym.designers.mutation import MutationDesigner
from spadegym.designers.notes import EditNotes, MutationNotes
from spadegym.envfile import normalized_code_hash
from spadegym.families import get_family
from spadegym.families.edits import edit_space
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, derive_seed, run_episodes
from spadegym.rollout.scoring import score
from spadegym.sandbox import Sandbox
from spadegym.signals import bands, get_designer_reward, invalid_reward
from spadegym.train import Policy, TrainConfig
from spadegym.train.models import prepare_model
from spadegym.validate import validate_sources

FAMILIES = ["suspect_grid", "code_breaker", "grid_maze", "hidden_order", "knapsack", "number_sequence"]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t (Cornish-Fisher expansion; within 0.01 of the table from df 3)."""
    z = 1.959964
    if df <= 0:
        return float("nan")
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def interval(values: list[float]) -> list[float]:
    """The mean's 95% interval (t) over independent values (one per context)."""
    n = len(values)
    if n < 2:
        return [float("nan"), float("nan")]
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return [round(mean - half, 4), round(mean + half, 4)]


@dataclass
class Measure:
    """What the gate and the frozen learner say about one level."""

    valid: bool
    win_rate: float = 0.0
    win_rate_hint: float = 0.0
    regret: float = 0.0
    reward: float = 0.0  # the designer reward (blend) of a valid level; 0 for an invalid one

    @property
    def in_band(self) -> bool:
        low, high = bands.LEARNABLE
        return self.valid and low <= self.win_rate <= high


class LevelMeter:
    """Measures each level once: the gate, then no-hint and hinted plays of the frozen learner on fixed seeds."""

    def __init__(self, box: Sandbox, learner: Learner, plays: int, hint_plays: int, seed: int):
        self.box, self.learner = box, learner
        self.plays, self.hint_plays, self.seed = plays, hint_plays, seed
        self.reward = get_designer_reward("blend")
        self.known: dict[str, Measure] = {}
        self.seconds = 0.0

    def measure(self, sources: list[str]) -> list[Measure]:
        started = time.perf_counter()
        todo = {}
        for source in sources:
            key = normalized_code_hash(source)
            if key not in self.known and key not in todo:
                todo[key] = source
        specs = {}
        verdicts = validate_sources([(source, f"{key}.py", None) for key, source in todo.items()], sandbox=self.box)
        for (key, source), verdict in zip(todo.items(), verdicts):
            if verdict.valid:
                specs[key] = Level(source)
            else:
                self.known[key] = Measure(False)
        for key, level in specs.items():
            # Each level is played alone, the learner's sampling seeded by the level: its measure is a function of
            # the level, not of the levels measured beside it (lockstep batches share one random stream).
            plays = [Play(key, derive_seed(self.seed, "measure", k), hinted=hinted, group=k)
                     for hinted, n in ((False, self.plays), (True, self.hint_plays)) for k in range(n)]
            with self.learner.evaluating(derive_seed(self.seed, "measure", key)):
                episodes = asyncio.run(run_episodes(self.box, {key: level}, plays, self.learner, RolloutConfig()))
            s = score({key: level}, episodes, {}).get(key)
            self.known[key] = Measure(False) if s is None else Measure(
                True, s.win_rate, s.win_rate_hint, s.regret, float(self.reward(s)))
        self.seconds += time.perf_counter() - started
        return [self.known[normalized_code_hash(source)] for source in sources]


def frozen_learner(box: Sandbox, families: list[str], episodes: int, seed: int, path: Path) -> Learner:
    """The built-in learner trained on the families' levels 0 and 1, each in three random training variations
    (as a run's levels come), half its plays hinted; saved and reused."""
    if path.is_dir() and any(path.iterdir()):  # an earlier invocation's (same families, episodes and seed)
        return Learner.load(path)
    rng = random.Random(seed + 2)
    envs = {}
    for name in families:
        family, space = get_family(name), edit_space(name)
        for level in (0, 1):
            for draw in range(3):
                envs[f"{name}-{level}-{draw}"] = Level(family.render({**space.level(level),
                                                                      **space.random_variation(rng)}))
    learner = make_learner(seed=seed)
    train_learner(learner, box, envs, episodes=episodes, seed=seed)
    learner.save(path)
    return learner


def parent_contexts(meter: LevelMeter, families: list[str], levels: list[int], seed: int,
                    eval_cells: int) -> tuple[list[LevelSummary], list[LevelSummary]]:
    """(evaluation, training) parents: each (family, level) cell in three random training variations, measured;
    the first variation of ``eval_cells`` cells evaluates, the other two of every cell train."""
    rng = random.Random(seed)
    cells = [(f, lv) for f in families for lv in levels]
    drawn = []
    for f, lv in cells:
        space = edit_space(f)
        for draw in range(3):
            drawn.append((f, lv, draw, {**space.level(lv), **space.random_variation(rng)}))
    sources = [get_family(f).render(knobs) for f, _, _, knobs in drawn]
    measures = meter.measure(sources)
    order = list(range(len(cells)))
    random.Random(seed + 1).shuffle(order)
    evaluated = {cells[i] for i in order[:eval_cells]}
    held, train = [], []
    for (f, lv, draw, knobs), m, source in zip(drawn, measures, sources):
        if not m.valid:
            continue
        summary = LevelSummary(f"parent-{f}-{lv}-{draw}", get_family(f).skill, m.win_rate, m.win_rate_hint,
                               m.regret, m.reward, family=f, knobs=knobs, source=source, times_played=1)
        if draw == 0 and (f, lv) in evaluated:
            held.append(summary)
        elif draw > 0:
            train.append(summary)
    return held, train


def sample_edits(designer: HFDesigner, parents: list[LevelSummary], edits: int) -> list[Candidate]:
    """``edits`` edits of each parent, in one batch."""
    context = DesignContext(skill="", count=len(parents) * edits, parents=parents)
    return asyncio.run(designer.propose(context))


def by_parent(candidates: list[Candidate], measures: list[Measure]) -> dict[str, list[Measure]]:
    out: dict[str, list[Measure]] = {}
    for c, m in zip(candidates, measures):
        out.setdefault(str(c.notes.parent if isinstance(c.notes, EditNotes) else None), []).append(m)
    return out


def judge(meter: LevelMeter, candidates: list[Candidate]) -> list[Measure]:
    """Refused edits are invalid; the others are judged by the gate and measured."""
    valid = [c for c in candidates if c.refusal is None]
    measured = dict(zip([c.candidate_id for c in valid], meter.measure([c.source for c in valid])))
    return [measured.get(c.candidate_id, Measure(False)) for c in candidates]


#: Times the mutation designer is asked again for edits of a parent (most of its proposals are fresh draws).
EDIT_DRAWS = 20


def figures(groups: dict[str, list[Measure]], keys: list[str]) -> dict[str, list[float]]:
    """Per context (in ``keys`` order): valid rate, mean reward, band share."""
    return {"valid": [float(np.mean([m.valid for m in groups[k]])) for k in keys],
            "reward": [float(np.mean([m.reward for m in groups[k]])) for k in keys],
            "band": [float(np.mean([m.in_band for m in groups[k]])) for k in keys]}


def edit_text(c: Candidate) -> str:
    """What one candidate did, in a line: its refusal, or its operator and changes (``level`` when it named one)."""
    if c.refusal:
        return c.refusal
    notes = c.notes if isinstance(c.notes, (EditNotes, MutationNotes)) else None
    level, edit = (notes.level, notes.edit) if notes is not None else (None, None)
    return f"{c.lineage.operator} " + json.dumps(({"level": level} if level is not None else {}) | (edit or {}))


def top_edits(candidates: list[Candidate], n: int = 5) -> list[list[Any]]:
    """The ``n`` most frequent edits, with their counts (a collapsed policy shows as one edit everywhere)."""
    return [[text, count] for text, count in Counter(map(edit_text, candidates)).most_common(n)]


def evaluate_designer(designer: HFDesigner, meter: LevelMeter, parents: list[LevelSummary], edits: int,
                      seed: int) -> tuple[dict[str, list[float]], dict[str, int], list[list[Any]]]:
    with designer.policy.evaluating(seed):
        candidates = sample_edits(designer, parents, edits)
    measures = judge(meter, candidates)
    operators = dict(Counter(c.refusal or c.lineage.operator for c in candidates))
    return figures(by_parent(candidates, measures), [p.env_id for p in parents]), operators, top_edits(candidates)


def mutation_edits(meter: LevelMeter, parents: list[LevelSummary], edits: int,
                   seed: int) -> tuple[dict[str, list[float]], dict[str, list[float]], list[str]]:
    """The mutation designer (default settings, the parent's family only) proposing from each parent alone: what it
    proposes (fresh draws of a family's easiest level included), and its edits of the parent alone (the same
    designer asked again, up to ``EDIT_DRAWS`` times, until it made ``edits`` edits); the parents it can edit."""
    groups: dict[str, list[Measure]] = {}
    edited: dict[str, list[Measure]] = {}
    for i, parent in enumerate(parents):
        context = DesignContext(skill=parent.skill, count=edits, parents=[parent])
        made = asyncio.run(MutationDesigner(seed=seed + i, config={"families": [parent.family]}).propose(context))
        groups[parent.env_id] = meter.measure([c.source for c in made]) or [Measure(False)]
        found = [c.source for c in made if c.lineage.operator != "new"]
        for draw in range(1, EDIT_DRAWS):
            if len(found) >= edits:
                break
            designer = MutationDesigner(seed=seed + i + 1000 * draw, config={"families": [parent.family]})
            found += [c.source for c in asyncio.run(designer.propose(context)) if c.lineage.operator != "new"]
        if found:
            edited[parent.env_id] = meter.measure(found[:edits])
    keys = [p.env_id for p in parents]
    editable = [k for k in keys if k in edited]
    return figures(groups, keys), figures(edited, editable), editable


def random_steps(meter: LevelMeter, parents: list[LevelSummary], edits: int, seed: int) -> dict[str, list[float]]:
    """Uniform single steps of each parent's training edit space."""
    rng = random.Random(seed)
    groups = {}
    for parent in parents:
        space = edit_space(parent.family or "")
        steps = space.steps(parent.knobs)
        knobs = [space.apply(parent.knobs, rng.choice(steps)) for _ in range(edits)]
        groups[parent.env_id] = meter.measure([get_family(parent.family or "").render(k) for k in knobs])
    return figures(groups, [p.env_id for p in parents])


def train_step(designer: HFDesigner, meter: LevelMeter, parents: list[LevelSummary], edits: int) -> dict[str, Any]:
    """One GRPO step on ``edits`` edits of each parent: the blend for a valid edit, less than any valid for the others."""
    candidates = sample_edits(designer, parents, edits)
    measures = judge(meter, candidates)
    floor = invalid_reward([m.reward for m in measures if m.valid])
    feedback = [Feedback(c.candidate_id, m.reward if m.valid else floor, m.valid, c.lineage.operator)
                for c, m in zip(candidates, measures)]
    stats = designer.update(feedback) or {}
    return {"reward": round(float(np.mean([m.reward for m in measures])), 4),
            "valid": round(float(np.mean([m.valid for m in measures])), 4),
            "band": round(float(np.mean([m.in_band for m in measures])), 4),
            "kl": stats.get("designer_kl_sampling"), "tokens_trained": stats.get("designer_tokens_trained"),
            "top_edit": top_edits(candidates, 1)[0]}


def edit_part(args: argparse.Namespace, model: str, train: TrainConfig, out: Path, console: Console) -> dict[str, Any]:
    started = time.perf_counter()
    with Sandbox() as box:
        t = time.perf_counter()
        learner = frozen_learner(box, args.families, args.learner_episodes, args.seed, out / "learner")
        learner_seconds = time.perf_counter() - t
        meter = LevelMeter(box, learner, args.plays, args.hint_plays, args.seed)
        held, training = parent_contexts(meter, args.families, [0, 1, 2, 3], args.seed, args.eval_contexts)
        verdicts = {v: sum(1 for p in held if side(p) == v) for v in ("easy", "band", "hard")}
        console.print(f"learner {learner_seconds:.0f}s; {len(held)} evaluation and {len(training)} training parents "
                      f"(evaluation: {verdicts}; no-hint win rates {[round(p.win_rate, 2) for p in held]})")
        policy = Policy.from_path(model, train, seed=args.seed)
        config = LLMDesignerConfig(mode="edit", edits_per_parent=args.edits, corpus_words=0)
        designer = HFDesigner(policy, train, config=config, corpus=None, seed=args.seed)
        free = HFDesigner(policy, train, config=config.model_copy(update={"constrained": False}), corpus=None,
                          seed=args.seed)
        unconstrained: dict[str, list[float]] = {"valid": []}
        ops_free: dict[str, int] = {}
        if args.unconstrained_contexts != 0:
            some = held[:args.unconstrained_contexts or len(held)]
            unconstrained, ops_free, _ = evaluate_designer(free, meter, some, args.edits, args.eval_seed)
            console.print(f"untrained, no grammar: valid {np.mean(unconstrained['valid']):.3f} {ops_free}")
            partial(out, unconstrained=unconstrained, ops_free=ops_free)
        before, ops_before, edits_before = evaluate_designer(designer, meter, held, args.edits, args.eval_seed)
        console.print(f"before: valid {np.mean(before['valid']):.3f} reward {np.mean(before['reward']):.3f} "
                      f"band {np.mean(before['band']):.3f} {ops_before}")
        partial(out, before=before, ops_before=ops_before, edits_before=edits_before)
        mutation, mutation_only_edits, editable = mutation_edits(meter, held, args.edits, args.seed)
        steps = random_steps(meter, held, args.edits, args.seed)
        console.print(f"mutation: reward {np.mean(mutation['reward']):.3f} band {np.mean(mutation['band']):.3f}; "
                      f"its edits of {len(editable)} parents: band {np.mean(mutation_only_edits['band'] or [0]):.3f}; "
                      f"random steps: reward {np.mean(steps['reward']):.3f} band {np.mean(steps['band']):.3f}")
        rng = random.Random(args.seed)
        curve = []
        t = time.perf_counter()
        for step in range(args.steps):
            batch = rng.sample(training, min(args.train_contexts, len(training)))
            curve.append(train_step(designer, meter, batch, args.edits))
            console.print(f"step {step}: {curve[-1]}  ({time.perf_counter() - t:.0f}s)")
            partial(out, mutation=mutation, mutation_edits=mutation_only_edits, random_steps=steps, curve=curve)
        train_seconds = time.perf_counter() - t
        after, ops_after, edits_after = evaluate_designer(designer, meter, held, args.edits, args.eval_seed)
        console.print(f"after: valid {np.mean(after['valid']):.3f} reward {np.mean(after['reward']):.3f} "
                      f"band {np.mean(after['band']):.3f} {ops_after}")

    def rise(a: list[float], b: list[float]) -> list[float]:
        return [x - y for x, y in zip(a, b)]

    mean = lambda xs: round(float(np.mean(xs)), 4)  # noqa: E731
    after_editable = [a for a, p in zip(after["band"], held) if p.env_id in editable]
    return {
        "valid_rate_before": mean(before["valid"]), "valid_rate_after": mean(after["valid"]),
        "valid_rate_before_ci95": interval(before["valid"]), "valid_rate_after_ci95": interval(after["valid"]),
        "valid_rate_unconstrained": mean(unconstrained["valid"]) if unconstrained["valid"] else None,
        "operators_unconstrained": ops_free,
        "reward_before": mean(before["reward"]), "reward_after": mean(after["reward"]),
        "reward_before_ci95": interval(before["reward"]), "reward_after_ci95": interval(after["reward"]),
        "reward_rise": mean(rise(after["reward"], before["reward"])),
        "reward_rise_ci95": interval(rise(after["reward"], before["reward"])),
        "reward_mutation": mean(mutation["reward"]), "reward_random_step": mean(steps["reward"]),
        "reward_after_vs_mutation_ci95": interval(rise(after["reward"], mutation["reward"])),
        "band_share_before": mean(before["band"]), "band_share_after": mean(after["band"]),
        "band_share_mutation": mean(mutation["band"]), "band_share_random_step": mean(steps["band"]),
        "band_share_rise_ci95": interval(rise(after["band"], before["band"])),
        "band_share_after_vs_mutation": mean(rise(after["band"], mutation["band"])),
        "band_share_after_vs_mutation_ci95": interval(rise(after["band"], mutation["band"])),
        # Its edits alone, on the parents it can edit (at a family's easiest knobs it has no easier edit, only fresh
        # draws), paired with the trained model's edits of the same parents.
        "mutation_editable_contexts": len(editable),
        "band_share_mutation_edits": mean(mutation_only_edits["band"]) if editable else None,
        "band_share_after_on_editable": mean(after_editable) if editable else None,
        "band_share_after_vs_mutation_edits_ci95": interval(rise(after_editable, mutation_only_edits["band"]))
        if editable else None,
        "reward_mutation_edits": mean(mutation_only_edits["reward"]) if editable else None,
        "operators_before": ops_before, "operators_after": ops_after,
        "top_edits_before": edits_before, "top_edits_after": edits_after,
        "contexts": len(held), "contexts_by_verdict": verdicts, "training_parents": len(training),
        "edits_per_context": args.edits, "train_contexts_per_step": args.train_contexts,
        "plays": args.plays, "hint_plays": args.hint_plays, "levels_measured": len(meter.known),
        "measure_seconds": round(meter.seconds, 1), "learner_seconds": round(learner_seconds, 1),
        "train_seconds": round(train_seconds, 1), "curve": curve,
        "per_context": {"parents": [p.env_id for p in held], "win_rate": [round(p.win_rate, 3) for p in held],
                        "reward_before": [round(x, 3) for x in before["reward"]],
                        "reward_after": [round(x, 3) for x in after["reward"]],
                        "reward_mutation": [round(x, 3) for x in mutation["reward"]],
                        "band_before": [round(x, 3) for x in before["band"]],
                        "band_after": [round(x, 3) for x in after["band"]],
                        "band_mutation": [round(x, 3) for x in mutation["band"]],
                        "band_mutation_edits": dict(zip(editable, [round(x, 3) for x in mutation_only_edits["band"]]))},
        "seconds": round(time.perf_counter() - started, 1),
    }


def partial(out: Path, **parts: Any) -> None:
    """What a long invocation has measured so far (``partial.json`` in ``--out``), for a run stopped early."""
    path = out / "partial.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**known, **parts}))


def reach_part(box: Sandbox, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Part ``reach``, no model: the band share of edits any designer could make of the evaluation parents (every
    one-knob step easier; every knob a step easier at once; the family's level 0 in the parent's variation), on
    the parents that have an easier level, measured as the edit part measures."""
    learner = frozen_learner(box, args.families, args.learner_episodes, args.seed, out / "learner")
    meter = LevelMeter(box, learner, args.plays, args.hint_plays, args.seed)
    held, _ = parent_contexts(meter, args.families, [0, 1, 2, 3], args.seed, args.eval_contexts)
    shares: dict[str, list[float]] = {"one_knob_easier": [], "every_knob_easier": [], "level_0": []}
    for parent in held:
        space, family = edit_space(parent.family or ""), get_family(parent.family or "")
        full = space.check(parent.knobs, held_out=True)
        down = {s.name: s.value for s in space.steps(full) if s.kind == "easier"}
        if not down:
            continue
        zero = {k: v for k, v in space.level(0).items() if k in space.knobs}
        for name, patches in (("one_knob_easier", [{k: v} for k, v in down.items()]), ("every_knob_easier", [down]),
                              ("level_0", [zero])):
            measures = meter.measure([family.render({**full, **patch}) for patch in patches])
            shares[name].append(float(np.mean([m.in_band for m in measures])))
    return {"parents": len(shares["level_0"]), **{f"band_share_{k}": round(float(np.mean(v)), 3) for k, v in shares.items()}}


def both_part(args: argparse.Namespace, model: str, out: Path, console: Console) -> dict[str, Any]:
    """One SmolLM2 as agent and edit-mode designer on shared weights, in the real loop (see the module docstring)."""
    from llm_grpo import heldout_success, level_zero_pool, paired_rise

    from spadegym.loop.config import validate_config
    from spadegym.loop.run import run
    from spadegym.store import RunStore

    family = args.both_family
    train = TrainConfig(system_prompt="short", action_rule="forgiving", reply_prefix="\\boxed{", max_new_tokens=8,
                        lr=5e-4, micro_batch=8, generation_batch=16, micro_batch_tokens=1024, max_seq_len=4096,
                        threads=args.threads, temperature=0.7, lora=True, progress_reward=1.0,
                        gradient_checkpointing=args.checkpointing, loss_type="grpo", dtype=args.dtype)
    rollout = RolloutConfig(max_turns=8)
    started = time.perf_counter()
    before, _, before_outcomes = heldout_success(model, train, [family], args.heldout_seeds, args.heldout_seed, rollout)
    console.print(f"held-out before: {before:.3f}")
    pool = level_zero_pool(out / "pool", family, args.both_rounds * args.edits, args.seed)
    config = validate_config({
        "agent": f"hf:{model}", "designer": f"hf:{model}", "rounds": args.both_rounds, "seed": args.seed,
        "skills": [get_family(family).skill], "skills_per_round": 1, "envs_per_round": 2 * args.edits,
        "sources": [{"source": str(pool), "share": 0.5}], "plays": 8, "hint_plays": 4, "group_size": 4,
        "heldout": {"every": 0, "levels": "easiest", "families": [family], "seeds": args.heldout_seeds,
                    "hint": False, "seed": args.heldout_seed},
        "rollout": {"max_turns": 8}, "train": train.model_dump(),
        "llm_designer": {"mode": "edit", "edits_per_parent": args.edits, "corpus_words": 0},
    })
    result = run(config, out=out / "run", console=Console(quiet=not args.verbose), report=True)
    summaries = [s.to_dict() for s in result.summaries]
    with RunStore.open(out / "run") as store:
        last = store.episodes(split="heldout", round=len(summaries) - 1)
    after_outcomes = {(e["env_id"], e["seed"]): bool(e["success"]) for e in last if e.get("failure") is None}
    learner = [s["learner"] for s in summaries]
    return {
        "family": family, "rounds": len(summaries), "heldout_success_before": before,
        "heldout_success_after": summaries[-1].get("heldout_success"), **paired_rise(before_outcomes, after_outcomes),
        "agent_updates": sum(1 for x in learner if "agent_updates" in x),
        "designer_updates": sum(1 for x in learner if "designer_updates" in x),
        "rounds_both_roles_updated": sum(1 for x in learner if "agent_updates" in x and "designer_updates" in x),
        "designer_valid_rate": [x.get("designer_valid_rate") for x in learner],
        "designer_reward": [x.get("designer_reward") for x in learner],
        "agent_kl": [x.get("agent_kl_sampling") for x in learner],
        "designer_kl": [x.get("designer_kl_sampling") for x in learner],
        "refusals": [s.get("refusals") for s in summaries], "win_rate": [s.get("win_rate") for s in summaries],
        "report": str(result.report) if result.report else None, "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="edit", choices=["edit", "both", "reach"])
    parser.add_argument("--model", help="model directory (default: spadegym models prepare smollm2)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="families of the parents (and the learner)")
    parser.add_argument("--learner-episodes", type=int, default=3000, help="the learner's training before it is frozen")
    parser.add_argument("--plays", type=int, default=24, help="no-hint plays measuring each level")
    parser.add_argument("--hint-plays", type=int, default=8, help="hinted plays measuring each level")
    parser.add_argument("--eval-contexts", type=int, default=24,
                        help="(family, level) cells evaluated before and after (24: all)")
    parser.add_argument("--train-contexts", type=int, default=4, help="parents per GRPO step")
    parser.add_argument("--edits", type=int, default=6, help="edits per parent (a GRPO group)")
    parser.add_argument("--steps", type=int, default=24, help="GRPO steps")
    parser.add_argument("--unconstrained-contexts", type=int, default=None,
                        help="evaluation contexts sampled without the grammar too (default: all; 0: none)")
    parser.add_argument("--lr", type=float, default=5e-4, help="LoRA learning rate")
    parser.add_argument("--temperature", type=float, default=1.0, help="the designer's sampling temperature")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="weights dtype (auto: bfloat16 on a GPU, float32 on the CPU)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=True,
                        help="recompute activations in the backward pass (less memory, more compute)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-seed", type=int, default=777, help="the sampling stream of before and after")
    parser.add_argument("--both-family", default="number_sequence", help="part both: the family (and held-out level 0)")
    parser.add_argument("--both-rounds", type=int, default=3, help="part both: rounds")
    parser.add_argument("--heldout-seeds", type=int, default=32, help="part both: held-out instances")
    parser.add_argument("--heldout-seed", type=int, default=4242)
    parser.add_argument("--out", help="directory for the learner and runs (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--verbose", action="store_true", help="part both: show the loop's round lines")
    args = parser.parse_args()
    args.families = [f.strip() for f in args.families.split(",") if f.strip()]
    console = Console(stderr=args.json)
    started = time.perf_counter()
    if args.part == "reach":  # no model
        with Sandbox() as box:
            print(json.dumps({"part": "reach", **reach_part(box, args, Path(args.out or tempfile.mkdtemp()))}))
        return
    model = args.model or str(prepare_model("smollm2"))
    out = Path(args.out or tempfile.mkdtemp(prefix="llm-designer-"))
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"model": Path(model).name, "part": args.part, "load_average_start": os.getloadavg()[0]}
    if args.part == "edit":
        train = TrainConfig(lr=args.lr, lora=True, temperature=args.temperature, threads=args.threads,
                            gradient_checkpointing=args.checkpointing, micro_batch=8, micro_batch_tokens=4096,
                            generation_batch=64, dtype=args.dtype)
        result.update(steps=args.steps, **edit_part(args, model, train, out, console))
    else:
        result.update(both_part(args, model, out, console))
    result.update(peak_memory_mb=round(peak_rss_mb(), 1), total_seconds=round(time.perf_counter() - started, 1),
                  load_average_end=os.getloadavg()[0])
    if args.json:
        print(json.dumps(result))
    else:
        console.print_json(json.dumps(result))


if __name__ == "__main__":
    main()
