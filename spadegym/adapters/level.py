"""A level as adapters serve it, and the error of a source that cannot be read (imported by every level source).

An adapter serves the run's own ``level.Level`` (there is one level class): ``ServedLevel`` adds only what
serving needs beside it, the id a client names it by, the file name its worker loads it as, and its chance
of being drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..level import Level, Params


class LevelSourceError(UserError):
    """The level source cannot be read: the message says what to pass instead."""


@dataclass(frozen=True)
class ServedLevel:
    """One environment file as an adapter serves it: the ``Level``, its id and file name, its weight."""

    level_id: str
    level: Level
    filename: str
    weight: float = 1.0  # relative chance of being drawn

    @classmethod
    def of(cls, level_id: str, source: str, filename: str, *, hint: str | None = None, skill: str = "",
           knobs: dict[str, Any] | None = None, weight: float = 1.0) -> ServedLevel:
        """A file level served as ``level_id``; ``hint`` None: the file's own hint() (if any)."""
        return cls(level_id, Level(source, skill=skill, hint=hint, params=Params(knobs=dict(knobs or {}))),
                   filename, weight)

    @property
    def source(self) -> str:
        return self.level.source or ""

    @property
    def hint(self) -> str | None:
        return self.level.hint

    @property
    def skill(self) -> str:
        return self.level.skill

    @property
    def knobs(self) -> dict[str, Any]:
        return self.level.knobs
