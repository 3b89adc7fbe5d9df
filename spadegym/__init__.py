"""spadegym: self-play in adaptive synthetic executable environments.

The curated public API (imported lazily, so the command line starts fast)::

    from spadegym import RunConfig, run, Sandbox, validate_source, run_episodes
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "RunConfig": "spadegym.loop.config",
    "load_config": "spadegym.loop.config",
    "run": "spadegym.loop.run",
    "Sandbox": "spadegym.sandbox",
    "SandboxConfig": "spadegym.sandbox",
    "validate_source": "spadegym.validate",
    "validate_paths": "spadegym.validate",
    "run_episodes": "spadegym.rollout",
    "Level": "spadegym.level",
    "Remote": "spadegym.level",
    "Play": "spadegym.rollout",
    "Episode": "spadegym.rollout",
    "make_agent": "spadegym.agents",
    "make_designer": "spadegym.designers.registry",
    "get_family": "spadegym.families",
    "list_families": "spadegym.families",
    "RunStore": "spadegym.store",
    "extract_action": "spadegym.envfile",
    "episode_return": "spadegym.envfile",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'spadegym' has no attribute {name!r}")
