"""What an agent can do, declared: play (``Agent``), and learn from its episodes (``LearningAgent``).

The loop reads these declarations once, when it builds the run; it never probes an
agent for a method. An agent that trains (the built-in learner, a Hugging Face
model trained with TRL) implements ``LearningAgent``; the rest play.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..rollout.agent import Agent, Reply, View
from ..rollout.records import Episode

__all__ = ["Agent", "Checkpointed", "LearningAgent", "Reply", "View"]


@runtime_checkable
class LearningAgent(Agent, Protocol):
    """An agent that learns: the loop trains it every round, saves it with the round, and evaluates it apart."""

    #: True: hinted plays train it too (the built-in learner distils the hint); False: they only measure regret.
    trains_on_hint: bool

    def update(self, episodes: Sequence[Episode]) -> Mapping[str, Any]:
        """Learn from one round's scored episodes; return figures for the round summary (numbers only are kept)."""
        ...

    def save(self, directory: Path) -> Any:
        """Write everything needed to continue training (weights, optimiser, random state) into ``directory``."""
        ...

    def restore(self, directory: Path) -> None:
        """Continue from what ``save`` wrote: after it, the agent acts and learns as the saved one would."""
        ...

    def evaluating(self, seed: int) -> AbstractContextManager[Any]:
        """Act for evaluation inside this block (its own random stream), so evaluation never shifts training."""
        ...


@runtime_checkable
class Checkpointed(Protocol):
    """A part whose learned weights live in a directory: a ``LearningAgent``, or a designer with weights (``hf:``)."""

    def save(self, directory: Path) -> Any: ...

    def restore(self, directory: Path) -> None: ...
