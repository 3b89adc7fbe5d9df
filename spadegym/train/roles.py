"""One policy per model path: an agent and a designer naming the same path share one set of weights
(the paper's recipe: one model, two roles)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import TrainConfig
from .policy import Policy


class PolicyPool:
    """The policies of a run, by resolved model path (each loaded on first use)."""

    def __init__(self, config: TrainConfig | None = None, seed: int = 0):
        self.config = config or TrainConfig()
        self.seed = seed
        self.policies: dict[str, Policy] = {}

    def get(self, path: str) -> Policy:
        key = str(Path(path).expanduser().resolve())
        if key not in self.policies:
            self.policies[key] = Policy.from_path(key, self.config, seed=self.seed)
        return self.policies[key]


def train_config(value: Any) -> TrainConfig:
    """A TrainConfig from itself, a dict of its fields, or None (the defaults)."""
    if isinstance(value, TrainConfig):
        return value
    return TrainConfig(**(value or {}))
