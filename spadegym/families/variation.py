"""Structural variation operators: what a family's levels vary besides difficulty, declared as data.

A level of a built-in family is its family plus one value per knob. Difficulty
knobs are ladders (``Family.own_knobs``, easiest first, extended past the
listed levels by ``Extend``). Beside them every family has the same
*variation dimensions*, each a list of choices that change the game's surface
or structure but not its rules:

    phrasing     which wording of the observation's labels and words (the family's phrase table)
    layout       how a line sets its label apart: ``label: value``, ``label = value``, ...
    line_order   the order of the observation's lines
    verbs        which names the actions use (the family's word table); the listed names stay aliases
    menu         the order of the action menu
    start        legal moves taken before the first observation (shifted initial conditions)
    variant      which instances the reset seeds map to
    step_cost    a cost on every step that does not end the episode (reward structure)
    extra_turns  turns added to the family's turn budget

Each dimension names the choices that no training draw ever uses
(``held_out``): the edge-case suite renders them, and a designer that draws
only ``training`` choices never trains on them. They were fixed before any
tuning; changing them changes what the edge-case figures mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dimension:
    """One way a level can vary without changing its difficulty knobs."""

    name: str
    kind: str  # phrasing | layout | actions | initial | reward | budget
    choices: tuple[Any, ...]  # the first is the default (the family as listed)
    held_out: tuple[Any, ...]  # never drawn in training: the edge-case suite's slice
    description: str

    @property
    def training(self) -> tuple[Any, ...]:
        """The choices a training draw may use."""
        return tuple(c for c in self.choices if c not in self.held_out)

    @property
    def default(self) -> Any:
        return self.choices[0]


#: Wordings per phrase and per action word: the default and two training wordings, then the held-out one.
WORDINGS = 4

DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("phrasing", "phrasing", tuple(range(WORDINGS)), (WORDINGS - 1,),
              "Which wording of the observation's labels and words (0: as listed); the family declares them."),
    Dimension("layout", "layout", ("colon", "equals", "pipe", "bracket"), ("bracket",),
              "How a line sets its label apart: 'label: value', 'label = value', 'label | value', '[label] value'."),
    Dimension("line_order", "layout", ("standard", "event_first", "reversed"), ("reversed",),
              "The order of the observation's lines: as listed, the last event first, or reversed."),
    Dimension("verbs", "actions", tuple(range(WORDINGS)), (WORDINGS - 1,),
              "Which names the actions (and the words they share with the observation) use (0: as listed); "
              "the listed names stay accepted as aliases."),
    Dimension("menu", "actions", ("listed", "reversed", "sorted", "shuffled"), ("shuffled",),
              "The order of the action menu: as listed, reversed, alphabetical, or shuffled at every turn."),
    Dimension("start", "initial", (0, 1, 2, 3), (3,),
              "Random legal moves taken before the first observation (the solution still wins from there)."),
    Dimension("variant", "initial", tuple(range(8)), (),
              "Which instances the reset seeds map to."),
    Dimension("step_cost", "reward", (0.0, 0.01, 0.05), (0.05,),
              "A cost on every step that does not end the episode (a win is still the full reward)."),
    Dimension("extra_turns", "budget", (0, 2, 4), (),
              "Turns added to the family's turn budget."),
)
DIMENSION_NAMES = tuple(d.name for d in DIMENSIONS)
_BY_NAME = {d.name: d for d in DIMENSIONS}


def dimension(name: str) -> Dimension:
    return _BY_NAME[name]


def held_out_variation() -> dict[str, Any]:
    """The edge-case slice: every dimension that has held-out choices at its first held-out choice."""
    return {d.name: (d.held_out[0] if d.held_out else d.default) for d in DIMENSIONS}


def in_training_slice(knobs: dict[str, Any]) -> bool:
    """Whether no dimension of ``knobs`` takes a held-out choice."""
    return not any(knobs.get(d.name, d.default) in d.held_out for d in DIMENSIONS)


#: Phrases of the machinery every family shares (labels of the core's own lines and the reply line).
CORE_PHRASES: dict[str, tuple[str, ...]] = {
    "game": ("game", "puzzle", "task", "scenario"),
    "event": ("event", "last result", "what happened", "outcome"),
    "turns left": ("turns left", "moves left", "steps remaining", "time left"),
    "actions": ("actions", "options", "valid moves", "choices"),
    "out of turns": ("out of turns", "out of moves", "no steps remaining", "time is up"),
    "invalid action": ("invalid action", "unknown move", "not a valid move", "illegal option"),
}
REPLIES = ("Reply with one action inside \\boxed{}.", "Answer with one option in \\boxed{}.",
           "Give your move as \\boxed{move}.", "Put the chosen action in \\boxed{} and nothing else.")


@dataclass(frozen=True)
class Extend:
    """How a difficulty knob continues past its last listed level: ``step`` per level, never past ``limit``.

    Its values past the ladder are ``last + step``, ``last + 2 step``, ... while they stay
    within ``limit``: a knob at its limit stays there as the other knobs climb.
    """

    step: float
    limit: float

    def values(self, last: Any) -> list[Any]:
        out: list[Any] = []
        value = last
        while True:
            value = value + self.step
            if isinstance(last, int) and not isinstance(last, bool) and float(self.step).is_integer():
                value = int(value)
            else:
                value = round(float(value), 4)
            if (self.step > 0 and value > self.limit) or (self.step < 0 and value < self.limit) or self.step == 0:
                return out
            out.append(value)
