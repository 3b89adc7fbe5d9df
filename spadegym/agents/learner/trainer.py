"""Training the learner on a fixed pool of environments, and evaluating it.

``train`` runs batches of GRPO groups through the one episode loop: each batch
holds ``batch_envs`` groups of ``group_size`` plays (a group shares one
environment instance, i.e. one seed, and one arm), all stepped in lockstep so
the learner scores every live episode of a turn in one forward pass. After
each batch the learner takes one ``update``. A share ``hint_fraction`` of the
groups plays in the hint arm: without hinted training the learner never
learns to read the ``hint:`` line, and the hint-based regret stays near zero.

``evaluate`` plays held-out seeds in both arms, pairing the arms on the same
instances. It samples from the policy by default (the policy as it would play
in a rollout); ``greedy=True`` takes the best-scored action instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...level import Level
from ...rollout.records import Episode
from ...rollout.runner import HandlePool, Play, RolloutConfig, derive_seed, run_episodes
from ...sandbox import Sandbox
from .agent import Learner

EVAL_CONCURRENCY = 256  # episodes (= sandbox workers) in flight during an evaluation
CurvePoint = dict[str, Any]  # {"episodes": N, "seconds": t, "envs": {id: {"success", "success_hint", "return", "return_hint"}}}


def _success_rate(episodes: list[Episode]) -> float:
    scored = [ep for ep in episodes if ep.scored]
    return float(np.mean([ep.success for ep in scored])) if scored else 0.0


def _mean_return(episodes: list[Episode]) -> float:
    """Partial credit counts here, not in the success rate."""
    scored = [ep for ep in episodes if ep.scored]
    return float(np.mean([ep.ret for ep in scored])) if scored else 0.0


async def evaluate_async(
    learner: Learner,
    sandbox: Sandbox,
    envs: Mapping[str, Level],
    *,
    seeds: int = 32,
    seed: int = 0,
    greedy: bool = False,
    rollout: RolloutConfig | None = None,
    handles: HandlePool | None = None,
) -> dict[str, dict[str, float]]:
    """Success rate per environment without and with the hint, on ``seeds`` held-out instances."""
    plays = [
        Play(env_id, derive_seed(seed, "eval", env_id, k), hinted=hinted, group=k)
        for env_id in envs for hinted in (False, True) for k in range(seeds)
    ]
    config = rollout or RolloutConfig(concurrency=max(1, min(len(plays), EVAL_CONCURRENCY)))
    with learner.evaluating(seed, greedy=greedy):
        episodes = await run_episodes(sandbox, envs, plays, learner, config, handles=handles)
    result: dict[str, dict[str, float]] = {}
    for env_id in envs:
        mine = [ep for ep in episodes if ep.env_id == env_id]
        result[env_id] = {
            "success": _success_rate([ep for ep in mine if not ep.hinted]),
            "success_hint": _success_rate([ep for ep in mine if ep.hinted]),
            "return": _mean_return([ep for ep in mine if not ep.hinted]),
            "return_hint": _mean_return([ep for ep in mine if ep.hinted]),
        }
    return result


def evaluate(learner: Learner, sandbox: Sandbox, envs: Mapping[str, Level], **kwargs: Any) -> dict[str, dict[str, float]]:
    """Synchronous ``evaluate_async`` (for scripts; inside an event loop await the async one)."""
    return asyncio.run(evaluate_async(learner, sandbox, envs, **kwargs))


async def train_async(
    learner: Learner,
    sandbox: Sandbox,
    envs: Mapping[str, Level],
    *,
    episodes: int,
    group_size: int = 8,
    hint_fraction: float = 0.5,
    batch_envs: int = 16,
    eval_every: int | None = None,
    eval_seeds: int = 32,
    greedy_eval: bool = False,
    rollout: RolloutConfig | None = None,
    on_eval: Callable[[CurvePoint], None] | None = None,
    on_update: Callable[[dict[str, Any]], None] | None = None,
    seed: int = 0,
) -> list[CurvePoint]:
    """Train for ``episodes`` episodes; return the learning curve (one point per evaluation).

    Evaluations happen before training, every ``eval_every`` episodes and at
    the end (none if ``eval_every`` is None). ``seconds`` counts training time
    only (rollouts and updates), not evaluation.
    """
    if not envs:
        raise ValueError("train needs at least one environment")
    if group_size < 1 or batch_envs < 1 or episodes < 0:
        raise ValueError("episodes must be >= 0, group_size and batch_envs >= 1")
    env_ids = list(envs)
    rng = np.random.default_rng([seed, 3])
    per_batch = batch_envs * group_size
    config = rollout or RolloutConfig(concurrency=per_batch)
    # Workers stay open across batches; the limit bounds processes when the pool holds many envs.
    handles = HandlePool(sandbox, limit=2 * max(config.concurrency, EVAL_CONCURRENCY))
    curve: list[CurvePoint] = []
    done, groups, seconds = 0, 0, 0.0
    next_eval = 0 if eval_every else None

    async def record() -> None:
        result = await evaluate_async(learner, sandbox, envs, seeds=eval_seeds, seed=seed,
                                      greedy=greedy_eval, rollout=rollout, handles=handles)
        point = {"episodes": done, "seconds": round(seconds, 3), "envs": result}
        curve.append(point)
        if on_eval is not None:
            on_eval(point)

    try:
        while True:
            if next_eval is not None and eval_every and done >= next_eval:
                await record()
                next_eval = done - done % eval_every + eval_every
            if done >= episodes:
                break
            started = time.perf_counter()
            count = max(1, min(batch_envs, (episodes - done) // group_size))
            plays = []
            for _ in range(count):
                env_id = env_ids[groups % len(env_ids)]
                hinted = bool(rng.random() < hint_fraction)
                instance = derive_seed(seed, "train", groups)
                plays += [Play(env_id, instance, hinted=hinted, group=groups) for _ in range(group_size)]
                groups += 1
            batch = await run_episodes(sandbox, envs, plays, learner, config, handles=handles)
            stats = learner.update(batch)
            done += len(batch)
            seconds += time.perf_counter() - started
            if on_update is not None:
                on_update({**stats, "total_episodes": done, "seconds": seconds})
        if eval_every and (not curve or curve[-1]["episodes"] != done):
            await record()
    finally:
        handles.close()
    return curve


def train(learner: Learner, sandbox: Sandbox, envs: Mapping[str, Level], **kwargs: Any) -> list[CurvePoint]:
    """Synchronous ``train_async`` (see there for the arguments)."""
    return asyncio.run(train_async(learner, sandbox, envs, **kwargs))
