"""Where validation and rollouts run: this process (local) or Ray actors that each own a sandbox."""

from __future__ import annotations

from typing import Any

from ..sandbox import SandboxConfig
from .base import EXECUTORS, EnvHost, Executor, FileHost, RayConfig
from .hosts import LevelHost, level_host
from .local import LocalExecutor

__all__ = ["EXECUTORS", "EnvHost", "Executor", "FileHost", "LevelHost", "LocalExecutor", "RayConfig", "level_host",
           "make_executor"]


def make_executor(name: str, sandbox: SandboxConfig | None = None, ray: RayConfig | None = None) -> Any:
    """The executor named ``name`` (``local`` or ``ray``); use it as a context manager."""
    if name == "local":
        return LocalExecutor(sandbox)
    if name == "ray":
        from .ray_actors import RayExecutor

        return RayExecutor(sandbox, ray or RayConfig())
    raise ValueError(f"unknown executor '{name}'; choose one of {', '.join(EXECUTORS)}")
