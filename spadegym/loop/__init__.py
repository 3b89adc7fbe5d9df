"""The self-play loop: configuration, rounds, resume."""

from .config import HeldoutConfig, LLMRoleConfig, RunConfig, load_config, validate_config
from .run import RunResult, run
from .selfplay import SelfPlay

__all__ = ["HeldoutConfig", "LLMRoleConfig", "RunConfig", "RunResult", "SelfPlay", "load_config", "run",
           "validate_config"]
