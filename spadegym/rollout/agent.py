"""The agent interface the episode runner consumes: batch-friendly and async.

The rollout runner steps many episodes in lockstep; at each turn it hands the
agent one ``View`` per live episode and awaits one ``Reply`` each. Text agents
answer with free text (the action is the last ``\\boxed{}``); choice agents
pick from ``view.valid_actions`` and may return the bare action.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class View:
    """What an agent sees at one turn of one episode."""

    episode_key: str  # unique per episode in flight (lets agents keep per-episode state)
    observation: str  # current observation; the hint line already applied per the agent's hint mode
    history: list[tuple[str, str]] = field(default_factory=list)  # earlier (observation, reply) pairs
    valid_actions: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    turn: int = 0
    max_turns: int | None = None
    hint: str | None = None  # the raw hint text, for agents that want it separately (the line is in observation)
    #: The episode's play (level, instance seed, arm), the same whatever order, batch or retry it is played in:
    #: what an agent seeds an episode's own random stream from ("" where no play stands behind the view).
    play: str = ""


@dataclass
class Reply:
    """An agent's answer for one view."""

    text: str  # raw reply (what a transcript shows)
    action: str | None  # parsed action; None is a format failure
    tokens: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # an agent-side failure (server down, timeout), never a task loss
    trace_ref: str | None = None  # the agent's own, opaque name for this episode's record; kept on the Episode


@runtime_checkable
class Agent(Protocol):
    """Anything that can act on a batch of views."""

    name: str
    #: True: the agent sees the whole conversation, so the hint goes into the first observation only.
    #: False: it sees only the current observation, so the hint line is added to every observation.
    keeps_history: bool
    #: True if the agent can only pick from ``valid_actions`` (the runner refuses envs without them).
    needs_valid_actions: bool
    #: True: every live episode's view goes to ``act`` in one batch per turn (one forward pass).
    #: False: each episode is its own call and moves on as soon as its reply is back (LLM servers).
    lockstep: bool

    async def act(self, views: list[View]) -> list[Reply]: ...

    def end_episodes(self, keys: list[str]) -> None:
        """Forget per-episode state (called when episodes finish)."""
        ...

    async def aclose(self) -> None: ...
