"""Playing episodes: the one episode loop, seeds, and the records it produces."""

from .records import Episode, Turn
from .runner import EnvSpec, Play, RolloutConfig, RolloutError, derive_seed, run_episodes

__all__ = ["EnvSpec", "Episode", "Play", "RolloutConfig", "RolloutError", "Turn", "derive_seed", "run_episodes"]
