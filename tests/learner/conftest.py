"""Learner test fixtures: the small environments in ``envs/`` and one shared training run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spadegym.agents.learner import Learner, LearnerConfig, train
from spadegym.level import Level

ENVS = Path(__file__).parent / "envs"


def env_specs(*names: str) -> dict[str, Level]:
    return {n: Level((ENVS / f"{n}.py").read_text()) for n in names}


@pytest.fixture(scope="session")
def specs():
    """``specs("lights", "vault")`` -> {name: Level} of files in ``envs/``."""
    return env_specs


@pytest.fixture(scope="module")
def trained(sandbox: Any) -> tuple[Learner, list[dict]]:
    """lights (learnable without hint) + arithmetic (only the hint names the answer), both arms."""
    learner = Learner(LearnerConfig(seed=3))
    curve = train(learner, sandbox, env_specs("lights", "arithmetic"), episodes=3072, eval_every=3072,
                  eval_seeds=48, hint_fraction=0.5, seed=3)
    return learner, curve
