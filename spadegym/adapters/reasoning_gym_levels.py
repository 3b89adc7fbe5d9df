"""reasoning-gym tasks as spadegym levels: its curriculum attributes become the levels' knobs.

    levels = ReasoningGymLevels("basic_arithmetic", levels=[0, 1, 2])
    write_pool(levels, "pool/")          # standalone environment files: validate, play, serve, train

A reasoning-gym task with a curriculum has attributes (``num_terms``,
``num_digits``, ...), each a list of levels, easiest first. spadegym level
``k`` sets every attribute to its level ``k`` (clipped to its last), exactly
as a built-in family's difficulty level does, and records the values as the
file's ``DIFFICULTY``. The instances are generated here, with reasoning-gym's
own generator and seeds, and written into a standalone environment file
(standard library only, so the sandbox runs it like any other level): a reset
seed picks an instance, the answer goes in ``\\boxed{}``, and it wins when it
equals the reference answer after normalising case and spaces. reasoning-gym's
own scorers (partial credit, numeric tolerance) do not run in the sandbox; the
test checks that both agree on the reference answers and on wrong ones.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from .level import Level, LevelSourceError

#: reasoning-gym's task categories (package names) and the SPADE skill each one trains.
SKILL_OF_CATEGORY = {
    "arithmetic": "Mathematical Reasoning", "algebra": "Mathematical Reasoning",
    "probability": "Mathematical Reasoning", "geometry": "Spatial Reasoning", "games": "Spatial Reasoning",
    "arc": "Pattern Recognition", "induction": "Pattern Recognition", "cognition": "Pattern Recognition",
    "logic": "Logical Deduction", "graphs": "Optimization", "algorithmic": "Optimization",
    "code": "Logical Deduction",
}

TEMPLATE = '''"""reasoning-gym task {task!r} at level {level} ({instances} instances generated with seed {seed})."""

SKILL = {skill!r}
DESCRIPTION = {description!r}
DIFFICULTY = {knobs!r}

INSTANCES = {rows!r}


def _normal(text):
    return " ".join(str(text).split()).casefold()


class {class_name}:
    max_turns = 1

    def reset(self, seed=None):
        self.question, self.answer = INSTANCES[(seed or 0) % len(INSTANCES)]
        return self.question + "\\n\\nGive only the final answer in \\\\boxed{{}}.", {{}}

    def step(self, action):
        won = _normal(action) == _normal(self.answer)
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {{}}

    def solution(self):
        return [self.answer]
'''


def _rg():
    try:
        import reasoning_gym
        from reasoning_gym import factory
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise LevelSourceError(f"reasoning-gym is not installed ({exc}); pip install 'spadegym[reasoning-gym]'.") from None
    return reasoning_gym, factory


def task_knobs(task: str) -> dict[str, list[Any]]:
    """The task's difficulty knobs: curriculum attribute -> its levels, easiest first."""
    _, factory = _rg()
    if task not in factory.DATASETS:
        near = difflib.get_close_matches(task, list(factory.DATASETS), n=1)
        tip = f" Did you mean {near[0]!r}?" if near else ""
        raise LevelSourceError(f"reasoning-gym has no task {task!r}.{tip}")
    if not factory.has_curriculum(task):
        raise LevelSourceError(f"reasoning-gym task {task!r} has no curriculum, so it has no difficulty knobs.")
    return {name: list(attr.levels) for name, attr in factory.create_curriculum(task).attributes.items()}


def render_level(task: str, level: int, instances: int = 64, seed: int = 0) -> Level:
    """One spadegym level of a reasoning-gym task: every knob at its ``level`` (clipped)."""
    reasoning_gym, factory = _rg()
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

    knobs = task_knobs(task)
    curriculum = factory.create_curriculum(task)
    for name, levels in knobs.items():
        curriculum.set_attr_level(name, min(level, len(levels) - 1))
    config = curriculum.generate_configuration({"seed": seed, "size": instances},
                                               DefaultCurriculumContext(mode=RangeAttributeMode.LAST_K, k=1))
    dataset = reasoning_gym.create_dataset(task, **{k: v for k, v in vars(config).items()})
    rows = [(str(entry["question"]), str(entry["answer"])) for entry in dataset]
    category = type(dataset).__module__.split(".")[1]
    values = {name: curriculum.get_attr_value(name) for name in knobs}
    class_name = "".join(part.title() for part in task.split("_")) + "Env"
    source = TEMPLATE.format(task=task, level=level, instances=instances, seed=seed,
                             skill=SKILL_OF_CATEGORY.get(category, "Logical Deduction"),
                             description=f"reasoning-gym {task}, level {level}", knobs=values, rows=rows,
                             class_name=class_name)
    level_id = f"rg_{task}_{level}"
    return Level(level_id=level_id, source=source, filename=f"{level_id}.py",
                 skill=SKILL_OF_CATEGORY.get(category, "Logical Deduction"), knobs={"level": level, **values})


class ReasoningGymLevels:
    """A reasoning-gym task as a level source, one level per difficulty step (all by default)."""

    def __init__(self, task: str, levels: list[int] | None = None, instances: int = 64, seed: int = 0):
        knobs = task_knobs(task)
        top = max(len(v) for v in knobs.values()) - 1
        wanted = list(range(top + 1)) if levels is None else levels
        if any(k < 0 for k in wanted):
            raise LevelSourceError(f"levels must be >= 0 (0 is easiest, {top} hardest for {task!r}).")
        self._levels = [render_level(task, k, instances, seed) for k in wanted]

    def levels(self) -> list[Level]:
        return list(self._levels)


def write_pool(source: ReasoningGymLevels, folder: str | Path) -> list[Path]:
    """Write each level as an environment file into ``folder`` (a pool every command and adapter reads)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for level in source.levels():
        path = folder / level.filename
        path.write_text(level.source)
        paths.append(path)
    return paths
