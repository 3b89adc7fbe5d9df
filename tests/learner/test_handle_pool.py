"""The runner's reusable worker pool (what makes repeated training batches cheap)."""

from __future__ import annotations

import asyncio

from spadegym.agents.learner import make_learner
from spadegym.level import Level
from spadegym.rollout import HandlePool, Play, run_episodes


def test_a_shared_pool_reuses_workers_across_calls_but_never_across_sources(sandbox, specs):
    envs = specs("lights")
    pool = HandlePool(sandbox)
    learner = make_learner(seed=0)
    plays = [Play("lights", seed, group=seed) for seed in range(6)]
    try:
        first = asyncio.run(run_episodes(sandbox, envs, plays, learner, handles=pool))
        workers = {id(h) for h in pool.all}
        second = asyncio.run(run_episodes(sandbox, envs, plays, learner, handles=pool))
        assert {id(h) for h in pool.all} == workers and len(workers) == 6
        assert all(ep.failure is None for ep in first + second)
        # The same id with other code: the old workers must not serve it.
        other = {"lights": Level(specs("arithmetic")["arithmetic"].source)}
        third = asyncio.run(run_episodes(sandbox, other, plays[:2], learner, handles=pool))
        assert all(t.observation.startswith("What is") for ep in third for t in ep.turns[:1])
        assert len(pool.all) == 2 and all(h.source == other["lights"].source for h in pool.all)
    finally:
        pool.close()
