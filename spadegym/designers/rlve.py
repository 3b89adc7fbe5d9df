"""RLVE-style adaptive verifiable environments: reasoning-gym tasks whose difficulty steps up with the agent's accuracy.

    designer = "spadegym.designers.rlve:RLVEDesigner"     # in a run's config (your own designer, Class(seed=seed))

The rule RLVE uses, on spadegym's levels: each task keeps a difficulty window
``[hardest - 1, hardest]`` over its levels (every curriculum attribute at the same step,
as ``adapters.reasoning_gym_levels`` renders them); a new level is drawn from that
window, and once the agent's no-hint win rate on the task's hardest level reaches
``ACCURACY`` the window moves one step up. Nothing else adapts: no designer reward,
no mutation; the curriculum follows the agent's accuracy alone, which is what sets
RLVE apart from SPADE's regret-driven designer.
"""

from __future__ import annotations

import random
from typing import Any

from ..families import imported
from .base import Candidate, DesignContext, Level, Lineage, Params, random_state, set_random_state

VERSION = "rlve-1"
#: The tasks the designer trains on by default (one per skill the games setting shares with reasoning-gym).
TASKS = ("basic_arithmetic", "chain_sum", "letter_counting", "number_sorting", "mini_sudoku", "spell_backward")
#: The win rate on a task's hardest level that moves its window one step up (RLVE's accuracy threshold).
ACCURACY = 0.9
#: Instances a level's generator draws from (its reset seed picks one).
INSTANCES = 10_000


class RLVEDesigner:
    """Proposes reasoning-gym levels from each task's difficulty window, stepped by the agent's accuracy."""

    name = "rlve"

    def __init__(self, seed: int = 0, tasks: tuple[str, ...] = TASKS, accuracy: float = ACCURACY):
        self.rng = random.Random(seed)
        self.accuracy = accuracy
        self.tops = {task: max(len(steps) for steps in imported.task_knobs(task).values()) - 1 for task in tasks}
        self.skills = {task: imported.render_task(task, {}, instances=1)[1] for task in tasks}
        self.hardest = dict.fromkeys(tasks, 0)
        self.serial = 0

    def task_skills(self) -> list[str]:
        """The skills the tasks train, each once (a run's ``skills``, so every round has tasks to draw)."""
        return list(dict.fromkeys(self.skills.values()))

    async def propose(self, context: DesignContext) -> list[Candidate]:
        self.step(context)
        tasks = [t for t, skill in self.skills.items() if skill == context.skill] or list(self.skills)
        return [self._candidate(self.rng.choice(tasks), context.skill) for _ in range(context.count)]

    def step(self, context: DesignContext) -> None:
        """Move a task's window up where the agent's win rate on its hardest level reached the threshold."""
        seen = [*context.frontier, *context.mastered, *context.hopeless, *context.parents]
        for task, hardest in self.hardest.items():
            played = [s.win_rate for s in seen if s.family == f"{imported.REASONING_GYM}{task}"
                      and s.knobs.get("level") == hardest and s.times_played > 0]
            if played and sum(played) / len(played) >= self.accuracy and hardest < self.tops[task]:
                self.hardest[task] = hardest + 1

    def _candidate(self, task: str, skill: str) -> Candidate:
        level = self.rng.choice(sorted({max(0, self.hardest[task] - 1), self.hardest[task]}))
        values = {name: steps[min(level, len(steps) - 1)] for name, steps in imported.task_knobs(task).items()}
        source, task_skill = imported.render_task(task, values, instances=INSTANCES, seed=self.rng.randrange(2**31),
                                                  label=f"at level {level}", written={"level": level, **values})
        self.serial += 1
        spec = Level(source, skill=task_skill or skill, params=Params(f"{imported.REASONING_GYM}{task}",
                                                                        {"level": level, **values}),
                     lineage=Lineage(operator="rlve", designer=VERSION))
        return Candidate(spec, candidate_id=f"rlve-{self.serial:05d}")

    def state_dict(self) -> dict[str, Any]:
        return {"hardest": self.hardest, "serial": self.serial, "rng": random_state(self.rng)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.hardest.update(state.get("hardest", {}))
        self.serial = state.get("serial", 0)
        if "rng" in state:
            set_random_state(self.rng, state["rng"])
