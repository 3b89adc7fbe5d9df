"""Playing episodes: the one episode loop, seeds, and the records it produces."""

from .records import Episode, Turn
from .runner import HandlePool, Play, RolloutConfig, RolloutError, derive_seed, run_episodes

__all__ = ["Episode", "HandlePool", "Play", "RolloutConfig", "RolloutError", "Turn", "derive_seed", "run_episodes"]
