"""Imported families: a reasoning-gym task as a family whose knobs are its curriculum attributes.

    family = TaskFamily("basic_arithmetic")
    source = family.render(family.level_knobs(2))     # every attribute at its third step

A reasoning-gym task with a curriculum has attributes (``num_terms``,
``num_digits``, ...), each a list of levels, easiest first: exactly a built-in
family's difficulty knobs, so the mutation designer steps them harder and
easier the same way. The ``variant`` knob is the seed of reasoning-gym's
generator. ``render`` writes an environment file that builds the task's
dataset at those attributes in the sandbox: each reset seed is a fresh
instance from reasoning-gym's generator, the answer goes in ``\\boxed{}``, and
the return is the task's own ``score_answer`` (partial credit below 1.0, a win
at 1.0). The file imports ``reasoning_gym``, which the gate allows and a run
with a reasoning-gym source preloads into the sandbox's zygote.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ..errors import UserError, install_hint
from .registry import Family, FamilyError

#: A family name (and a level source spec) naming a reasoning-gym task: ``reasoning-gym:TASK``.
REASONING_GYM = "reasoning-gym:"
#: Generator seeds a level's ``variant`` knob draws from.
VARIANTS = list(range(8))
#: Instances a level draws from (its reset seed picks one): reasoning-gym generates each on demand.
INSTANCES = 100_000
#: The module a reasoning-gym file imports, which the gate must allow and the sandbox preloads.
MODULE = "reasoning_gym"

#: reasoning-gym's task categories (package names) and the SPADE skill each one trains.
SKILL_OF_CATEGORY = {
    "arithmetic": "Mathematical Reasoning", "algebra": "Mathematical Reasoning",
    "probability": "Mathematical Reasoning", "geometry": "Spatial Reasoning", "games": "Spatial Reasoning",
    "arc": "Pattern Recognition", "induction": "Pattern Recognition", "cognition": "Pattern Recognition",
    "logic": "Logical Deduction", "graphs": "Optimization", "algorithmic": "Optimization",
    "code": "Logical Deduction",
}

TEMPLATE = '''"""reasoning-gym task {task!r}{label}: a fresh instance of its generator (seed {seed}) for every reset seed."""

import reasoning_gym
from reasoning_gym import factory
from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

SKILL = {skill!r}
DESCRIPTION = {description!r}
FAMILY = {family!r}
DIFFICULTY = {knobs!r}

TASK = {task!r}
ATTRIBUTE_LEVELS = {attribute_levels!r}
INSTANCES = {instances!r}


def _dataset():
    curriculum = factory.create_curriculum(TASK)
    for name, level in ATTRIBUTE_LEVELS.items():
        curriculum.set_attr_level(name, level)
    config = curriculum.generate_configuration(
        {{"seed": {seed!r}, "size": INSTANCES}}, DefaultCurriculumContext(mode=RangeAttributeMode.LAST_K, k=1))
    return reasoning_gym.create_dataset(TASK, **dict(vars(config)))


DATASET = _dataset()


class {class_name}:
    max_turns = 1

    def reset(self, seed=None):
        self.entry = DATASET[(seed or 0) % INSTANCES]
        return str(self.entry["question"]) + "\\n\\nGive only the final answer in \\\\boxed{{}}.", {{}}

    def step(self, action):
        score = min(1.0, max(0.0, float(DATASET.score_answer(action, self.entry))))
        said = "Correct." if score >= 1.0 else ("Partly right." if score > 0 else "Wrong.")
        return said, score, True, False, {{"score": score}}

    def solution(self):
        return [str(self.entry["answer"])]
'''


class TaskError(UserError, FamilyError):
    """A reasoning-gym task that does not exist, has no curriculum, or a missing extra."""


def _rg() -> tuple[Any, Any]:
    try:
        import reasoning_gym
        from reasoning_gym import factory
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise TaskError(f"reasoning-gym is not installed ({exc}); {install_hint('reasoning-gym')}.") from None
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


def render_task(task: str, knobs: dict[str, Any], *, instances: int = INSTANCES, seed: int = 0,
                label: str = "", written: dict[str, Any] | None = None) -> tuple[str, str]:
    """The environment file of ``task`` with each curriculum attribute at the value ``knobs`` gives it
    (its easiest where unset), and the skill it trains. ``written`` is the file's ``DIFFICULTY`` (default: ``knobs``)."""
    reasoning_gym, _factory = _rg()
    levels = task_knobs(task)
    attribute_levels = {name: steps.index(knobs[name]) if name in knobs else 0 for name, steps in levels.items()}
    dataset = reasoning_gym.create_dataset(task, seed=seed, size=1)
    skill = SKILL_OF_CATEGORY.get(type(dataset).__module__.split(".")[1], "Logical Deduction")
    class_name = "".join(part.title() for part in task.split("_")) + "Env"
    source = TEMPLATE.format(task=task, label=f" {label}" if label else "", instances=instances, seed=seed, skill=skill,
                             description=f"reasoning-gym {task}{', ' + label if label else ''}",
                             family=f"{REASONING_GYM}{task}", knobs=dict(knobs if written is None else written),
                             attribute_levels=attribute_levels, class_name=class_name)
    return source, skill


class TaskFamily(Family):
    """A reasoning-gym task as a family: its curriculum attributes are the knobs, ``variant`` the generator seed."""

    def __init__(self, task: str, instances: int = INSTANCES):
        levels = task_knobs(task)
        self.task, self.instances = task, instances
        _, skill = render_task(task, {}, instances=1)
        self.name, self.skill, self.env_class, self.imports = f"{REASONING_GYM}{task}", skill, type(None), ()
        self.description = f"reasoning-gym task {task}"
        self.own_knobs = levels
        self.extend, self.phrases, self.verbs = {}, {}, {}  # its knobs end at the task's last level; no wordings
        self.knobs = {**levels, "variant": VARIANTS}

    def render(self, knobs: dict[str, Any]) -> str:
        values = self.check_knobs(knobs)
        attributes = {k: v for k, v in values.items() if k != "variant"}
        return render_task(self.task, attributes, instances=self.instances, seed=values["variant"],
                           written=values)[0]
