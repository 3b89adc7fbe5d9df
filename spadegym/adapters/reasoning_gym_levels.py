"""reasoning-gym tasks as spadegym levels: its curriculum attributes become the levels' knobs.

    levels = ReasoningGymLevels("basic_arithmetic", levels=[0, 1, 2])
    write_pool(levels, "pool/")          # standalone environment files: validate, play, serve, train

spadegym level ``k`` of a task sets every curriculum attribute to its level
``k`` (clipped to its last), exactly as a built-in family's difficulty level
does; the files are rendered by the task's family (``families.imported``),
which is also what a run's ``reasoning-gym:TASK`` source mutates. The test
checks that reasoning-gym's own scorers and the file agree on the reference
answers and on wrong ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..families import imported
from ..families.imported import SKILL_OF_CATEGORY, TaskError
from ..outputs import make_folder, write_text
from .level import LevelSourceError, ServedLevel

__all__ = ["SKILL_OF_CATEGORY", "ReasoningGymLevels", "render_level", "task_knobs", "write_pool"]


def task_knobs(task: str) -> dict[str, list[Any]]:
    """The task's difficulty knobs: curriculum attribute -> its levels, easiest first."""
    try:
        return imported.task_knobs(task)
    except TaskError as exc:
        raise LevelSourceError(str(exc)) from None


def render_level(task: str, level: int, instances: int = imported.INSTANCES, seed: int = 0) -> ServedLevel:
    """One spadegym level of a reasoning-gym task: every knob at its ``level`` (clipped)."""
    values = {name: steps[min(level, len(steps) - 1)] for name, steps in task_knobs(task).items()}
    source, skill = imported.render_task(task, values, instances=instances, seed=seed, label=f"at level {level}")
    level_id = f"rg_{task}_{level}"
    return ServedLevel.of(level_id, source, f"{level_id}.py", skill=skill,
                          knobs={"level": level, **values})


class ReasoningGymLevels:
    """A reasoning-gym task as a level source, one level per difficulty step (all by default)."""

    def __init__(self, task: str, levels: list[int] | None = None, instances: int = imported.INSTANCES, seed: int = 0):
        knobs = task_knobs(task)
        top = max(len(v) for v in knobs.values()) - 1
        wanted = list(range(top + 1)) if levels is None else levels
        if any(k < 0 for k in wanted):
            raise LevelSourceError(f"levels must be >= 0 (0 is easiest, {top} hardest for {task!r}).")
        self._levels = [render_level(task, k, instances, seed) for k in wanted]

    def levels(self) -> list[ServedLevel]:
        return list(self._levels)


def write_pool(source: ReasoningGymLevels, folder: str | Path) -> list[Path]:
    """Write each level as an environment file into ``folder`` (a pool every command and adapter reads)."""
    folder = Path(folder)
    make_folder(folder, folder)
    # A pool folder may hold anyone's links: each file is written inside it, never through one.
    return [write_text(folder / level.filename, level.source, folder) for level in source.levels()]
