"""A level as adapters serve it, and the error of a source that cannot be read (imported by every level source)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError


class LevelSourceError(UserError):
    """The level source cannot be read: the message says what to pass instead."""


@dataclass(frozen=True)
class Level:
    """One environment file as an adapter serves it."""

    level_id: str
    source: str
    filename: str
    hint: str | None = None  # the designer's hint; None: the file's own hint() (if any)
    skill: str = ""
    knobs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    weight: float = 1.0  # relative chance of being drawn
