"""The self-play loop: configuration, rounds, resume, and the callbacks that show a run."""

from .callbacks import ConsoleCallback, RunCallback, RunStart, TensorBoardCallback
from .config import HeldoutConfig, LLMRoleConfig, RunConfig, load_config, validate_config
from .run import RunResult, run
from .selfplay import SelfPlay

__all__ = ["ConsoleCallback", "HeldoutConfig", "LLMRoleConfig", "RunCallback", "RunConfig", "RunResult", "RunStart",
           "SelfPlay", "TensorBoardCallback", "load_config", "run", "validate_config"]
