"""The designer interface: both designers emit the same artifact.

A designer proposes candidates (a standalone environment file plus hint and
metadata); the validation gate judges them; the loop later reports each
candidate's designer reward through ``update``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..agents.base import Checkpointed
from ..families import SKILLS
from ..level import Level, Lineage, Params
from ..llm.client import ChatClient
from ..validate.verdict import Verdict
from .notes import Notes

__all__ = ["SKILLS", "Abilities", "Candidate", "DesignContext", "Designer", "Feedback", "LearningDesigner", "Level", "LevelSummary",
           "Lineage", "ModelDesigner", "Params", "abilities"]


@dataclass
class LevelSummary:
    """What the designer may know about one environment in the pool."""

    env_id: str
    skill: str
    win_rate: float  # no-hint win rate
    win_rate_hint: float
    regret: float
    score: float  # designer reward it earned
    family: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)
    code_excerpt: str = ""
    source: str | None = None  # full source (mutation designers need it)
    depth: int = 0  # mutation depth (0 = a fresh draw)
    retired: bool = False  # it has had its plays and left replay: time for a harder level of its family
    times_played: int = 0  # rounds it was played in (its win rates are means over the last few)


@dataclass
class DesignContext:
    """Everything a designer may use for one round of proposals."""

    skill: str
    count: int  # how many candidates to propose
    round: int = 0
    seed: int = 0
    frontier: list[LevelSummary] = field(default_factory=list)  # feasible, not yet solved
    mastered: list[LevelSummary] = field(default_factory=list)
    hopeless: list[LevelSummary] = field(default_factory=list)
    parents: list[LevelSummary] = field(default_factory=list)  # buffer levels ranked for mutation


@dataclass
class Candidate:
    """One proposed level (``level``: the file or server, its hint, skill, params and lineage) and the designer's
    bookkeeping of it."""

    level: Level
    candidate_id: str = ""  # set by the designer; stable key for update()
    attempts: int = 1  # generations it took (1 + repair turns)
    #: The gate's verdict, when the designer validated the level itself (the LLM designer's repair
    #: loop does, a remote level's wire check does); None: the judge validates it.
    verdict: Verdict | None = None
    #: Why the designer itself gave up on it (no_code, declined, invalid, hint_leak); None: it did not.
    refusal: str | None = None
    #: Rewarded as an invalid proposal even if valid (a designer rewarded on its first attempt, repaired).
    reward_as_invalid: bool = False
    #: The part of a mixed curriculum that proposed it (its name, set by ``MixedDesigner``; stored in ``meta`` as
    #: ``source``): the watch credits its levels to it, and the mix hands it its candidates' rewards. None: no mix.
    part: str | None = None
    #: The pool file it was read from (set by ``PoolDesigner``; stored in ``meta`` as ``file``). None: no pool's.
    pool_file: str | None = None
    #: The designer's own notes on how it made the level (``designers.notes``; stored as the proposal's ``meta``,
    #: with ``pool_file`` and ``part``); only designers read them: the loop, the composites and the store read
    #: the typed fields above. None: the designer notes nothing.
    notes: Notes | None = None

    def stored_meta(self) -> dict[str, Any]:
        """The proposal's ``meta`` as stored: the designer's notes, then the pool file and the mix's part."""
        return {**(self.notes.to_dict() if self.notes is not None else {}),
                **({"file": self.pool_file} if self.pool_file is not None else {}),
                **({"source": self.part} if self.part is not None else {})}

    @property
    def source(self) -> str:
        return self.level.source or ""

    @property
    def skill(self) -> str:
        return self.level.skill

    @property
    def hint(self) -> str | None:
        return self.level.hint

    @property
    def family(self) -> str | None:
        return self.level.family

    @property
    def knobs(self) -> dict[str, Any]:
        return self.level.knobs

    @property
    def lineage(self) -> Lineage:
        return self.level.lineage

    def to_dict(self) -> dict[str, Any]:
        """The candidate as stored (its verdict is stored beside it; a remote level's settings beside its kind)."""
        level = self.level.to_dict()
        where = {key: level.pop(key) for key in ("kind", "remote") if key in level}  # stored last, as ever
        return {**level, "candidate_id": self.candidate_id, "attempts": self.attempts, "refusal": self.refusal,
                "reward_as_invalid": self.reward_as_invalid, "meta": self.stored_meta(), **where}


@dataclass
class Feedback:
    """The designer reward a candidate earned (invalid ones get less than any valid one)."""

    candidate_id: str
    reward: float
    valid: bool
    operator: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    part: str | None = None  # the candidate's ``part``: which part of a mixed curriculum proposed it
    pooled: bool = False  # the candidate is a pool's file (``pool_file``), not the designer after the pool's


@runtime_checkable
class Designer(Protocol):
    """Anything that proposes environments. ``propose`` is a coroutine: the loop awaits it on the
    run's one event loop, so a model-backed designer shares that loop with the agent's clients."""

    name: str

    async def propose(self, context: DesignContext) -> list[Candidate]:
        """``context.count`` candidates for ``context.skill``, valid or not (refusals carry their verdict)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-able state, saved with the run for resume."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class LearningDesigner(Designer, Protocol):
    """A designer that learns from the designer rewards its candidates earned (the baselines do not).

    A designer with weights (a model trained with TRL) keeps its own record of what it
    generated per ``candidate_id`` and trains in ``update``; it also implements
    ``save``/``restore`` like a ``LearningAgent`` so its weights travel with the run.
    """

    def update(self, feedback: list[Feedback]) -> None:
        """This round's rewards, one per candidate (refused ones get less than any valid one)."""
        ...


@runtime_checkable
class ModelDesigner(Designer, Protocol):
    """A designer that writes with a chat model (``openai:``, ``hf:``).

    It counts what it did (``report``), lends a client on its model (the red team
    asks it to simplify a failing file), and holds resources until ``close``.
    """

    def report(self) -> dict[str, Any]:
        """What the designer counted itself: proposals, repairs, refusals, tokens used."""
        ...

    def chat_client(self) -> ChatClient:
        """A new client on the designer's model; the caller closes it (``aclose``)."""
        ...

    def close(self) -> None:
        """Release what the designer opened (its own sandbox, if it made one)."""
        ...


@dataclass(frozen=True)
class Abilities:
    """What a designer can do beyond proposing, as data: a composite (a pool before a designer, a mixed
    curriculum) declares what its parts can do instead of being a subclass per combination."""

    learns: bool = False  # ``update(feedback)`` trains it on its designer rewards
    checkpointed: bool = False  # ``save``/``restore`` carry its weights with the run


def abilities(designer: Designer) -> Abilities:
    """``designer.abilities`` where it declares them (composites do); else what its methods offer (your own
    class, a built-in single designer)."""
    declared = getattr(designer, "abilities", None)
    if isinstance(declared, Abilities):
        return declared
    return Abilities(learns=isinstance(designer, LearningDesigner), checkpointed=isinstance(designer, Checkpointed))


def random_state(rng: random.Random) -> list[Any]:
    """A ``random.Random``'s state as plain JSON (saved with a designer's state for resume)."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def set_random_state(rng: random.Random, state: list[Any]) -> None:
    """Put back what ``random_state`` saved."""
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))
