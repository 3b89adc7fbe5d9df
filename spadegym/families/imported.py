"""Imported families: a reasoning-gym task as a family whose knobs are its curriculum attributes.

    family = TaskFamily("basic_arithmetic", instances=64)
    source = family.render(family.level_knobs(2))     # every attribute at its third step

A reasoning-gym task with a curriculum has attributes (``num_terms``,
``num_digits``, ...), each a list of levels, easiest first: exactly a built-in
family's difficulty knobs, so the mutation designer steps them harder and
easier the same way. The ``variant`` knob is the seed of reasoning-gym's
generator (which instances the file holds). ``render`` generates the instances
here, with reasoning-gym's own generator, into a standalone environment file
(standard library only): a reset seed picks an instance, the answer goes in
``\\boxed{}``, and it wins when it equals the reference answer after
normalising case and spaces. reasoning-gym's own scorers (partial credit,
numeric tolerance) do not run in the sandbox.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ..errors import UserError
from .registry import Family, FamilyError

#: A family name (and a level source spec) naming a reasoning-gym task: ``reasoning-gym:TASK``.
REASONING_GYM = "reasoning-gym:"
#: Generator seeds a level's ``variant`` knob draws from.
VARIANTS = list(range(8))

#: reasoning-gym's task categories (package names) and the SPADE skill each one trains.
SKILL_OF_CATEGORY = {
    "arithmetic": "Mathematical Reasoning", "algebra": "Mathematical Reasoning",
    "probability": "Mathematical Reasoning", "geometry": "Spatial Reasoning", "games": "Spatial Reasoning",
    "arc": "Pattern Recognition", "induction": "Pattern Recognition", "cognition": "Pattern Recognition",
    "logic": "Logical Deduction", "graphs": "Optimization", "algorithmic": "Optimization",
    "code": "Logical Deduction",
}

TEMPLATE = '''"""reasoning-gym task {task!r}{label} ({instances} instances generated with seed {seed})."""

SKILL = {skill!r}
DESCRIPTION = {description!r}
FAMILY = {family!r}
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


class TaskError(UserError, FamilyError):
    """A reasoning-gym task that does not exist, has no curriculum, or a missing extra."""


def _rg() -> tuple[Any, Any]:
    try:
        import reasoning_gym
        from reasoning_gym import factory
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise TaskError(f"reasoning-gym is not installed ({exc}); pip install 'spadegym[reasoning-gym]'.") from None
    return reasoning_gym, factory


def task_knobs(task: str) -> dict[str, list[Any]]:
    """The task's difficulty knobs: curriculum attribute -> its levels, easiest first."""
    _, factory = _rg()
    if task not in factory.DATASETS:
        near = difflib.get_close_matches(task, list(factory.DATASETS), n=1)
        tip = f" Did you mean {near[0]!r}?" if near else ""
        raise TaskError(f"reasoning-gym has no task {task!r}.{tip}")
    if not factory.has_curriculum(task):
        raise TaskError(f"reasoning-gym task {task!r} has no curriculum, so it has no difficulty knobs.")
    return {name: list(attr.levels) for name, attr in factory.create_curriculum(task).attributes.items()}


@functools.lru_cache(maxsize=64)
def _cached_knobs(task: str) -> dict[str, list[Any]]:
    return task_knobs(task)


def imported_knobs(family: str) -> dict[str, list[Any]] | None:
    """The knob ladders of an imported family by name (``reasoning-gym:TASK``); None when it names none."""
    if not family.startswith(REASONING_GYM):
        return None
    try:
        return _cached_knobs(family[len(REASONING_GYM):])
    except TaskError:
        return None


def render_task(task: str, knobs: dict[str, Any], *, instances: int = 64, seed: int = 0,
                label: str = "", written: dict[str, Any] | None = None) -> tuple[str, str]:
    """The environment file of ``task`` with each curriculum attribute at the value ``knobs`` gives it
    (its easiest where unset), and the skill it trains. ``written`` is the file's ``DIFFICULTY`` (default: ``knobs``)."""
    reasoning_gym, factory = _rg()
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

    levels = task_knobs(task)
    curriculum = factory.create_curriculum(task)
    for name, steps in levels.items():
        curriculum.set_attr_level(name, steps.index(knobs[name]) if name in knobs else 0)
    config = curriculum.generate_configuration({"seed": seed, "size": instances},
                                               DefaultCurriculumContext(mode=RangeAttributeMode.LAST_K, k=1))
    dataset = reasoning_gym.create_dataset(task, **dict(vars(config)))
    rows = [(str(entry["question"]), str(entry["answer"])) for entry in dataset]
    skill = SKILL_OF_CATEGORY.get(type(dataset).__module__.split(".")[1], "Logical Deduction")
    class_name = "".join(part.title() for part in task.split("_")) + "Env"
    source = TEMPLATE.format(task=task, label=f" {label}" if label else "", instances=instances, seed=seed, skill=skill,
                             description=f"reasoning-gym {task}{', ' + label if label else ''}",
                             family=f"{REASONING_GYM}{task}", knobs=dict(knobs if written is None else written),
                             rows=rows, class_name=class_name)
    return source, skill


class TaskFamily(Family):
    """A reasoning-gym task as a family: its curriculum attributes are the knobs, ``variant`` the generator seed."""

    def __init__(self, task: str, instances: int = 64):
        levels = task_knobs(task)
        self.task, self.instances = task, instances
        _, skill = render_task(task, {}, instances=1)
        self.name, self.skill, self.env_class, self.imports = f"{REASONING_GYM}{task}", skill, type(None), ()
        self.description = f"reasoning-gym task {task}"
        self.own_knobs = levels
        self.knobs = {**levels, "variant": VARIANTS}

    def render(self, knobs: dict[str, Any]) -> str:
        values = self.check_knobs(knobs)
        attributes = {k: v for k, v in values.items() if k != "variant"}
        return render_task(self.task, attributes, instances=self.instances, seed=values["variant"],
                           written=values)[0]
