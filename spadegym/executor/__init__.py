"""Where validation and rollouts run: this process (local) or Ray actors that each own a sandbox."""

from .base import EXECUTORS, EnvHost, Executor, LocalExecutor, RayConfig, ValidationJob, make_executor

__all__ = ["EXECUTORS", "EnvHost", "Executor", "LocalExecutor", "RayConfig", "ValidationJob", "make_executor"]
