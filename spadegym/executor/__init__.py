"""Where validation and rollouts run: this process (local) or Ray actors that each own a sandbox."""

from __future__ import annotations

from typing import Any

from ..sandbox import SandboxConfig
from .base import EXECUTORS, EnvHost, Executor, FileHost, RayConfig
from .hosts import LevelHost, level_host
from .local import LocalExecutor

__all__ = ["EXECUTORS", "EnvHost", "Executor", "FileHost", "LevelHost", "LocalExecutor", "RayConfig",
           "executor_validator", "level_host", "make_executor"]


def make_executor(name: str, sandbox: SandboxConfig | None = None, ray: RayConfig | None = None) -> Any:
    """The executor named ``name`` (``local`` or ``ray``); use it as a context manager."""
    if name == "local":
        return LocalExecutor(sandbox)
    if name == "ray":
        from .ray_actors import RayExecutor

        return RayExecutor(sandbox, ray or RayConfig())
    raise ValueError(f"unknown executor '{name}'; choose one of {', '.join(EXECUTORS)}")


def executor_validator(executor: Executor, validation: Any) -> Any:
    """The gate of ``executor`` for a designer that validates as it writes: (code, hint, name) -> verdict (a run's
    designer and a red-team search's)."""
    from ..level import Level

    def validate(code: str, hint: str | None, name: str) -> Any:
        return executor.validate([Level(code, hint=hint)], validation, names=[name])[0]

    return validate
