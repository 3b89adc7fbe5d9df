"""Adapters: spadegym levels in other frameworks (Gymnasium, OpenEnv, verifiers, TRL) and
other frameworks' tasks as spadegym levels (reasoning-gym, OpenEnv servers).

Every adapter is a thin layer over ``PlaySession`` (reset/step of an environment
file in a sandbox worker) and a ``LevelSource`` (a pool or a live run). The
framework modules import their library on import; this package imports none.
"""

from .level import ServedLevel
from .levels import LevelSource, LevelSourceError, PoolLevels, RunLevels, open_levels
from .session import PlaySession, SessionError, Transition, shared_sandbox

__all__ = [
    "LevelSource", "LevelSourceError", "PlaySession", "PoolLevels", "RunLevels", "ServedLevel", "SessionError",
    "Transition", "open_levels", "shared_sandbox",
]
