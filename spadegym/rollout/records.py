"""Records of play: what a rollout produces and the store keeps."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

from ..envfile.contract import is_success


@dataclass
class Turn:
    """One agent decision and the environment's answer."""

    observation: str  # exactly what the agent saw (hint line included in the hint arm)
    reply: str  # the agent's raw reply
    action: str | None  # the parsed action (None: format failure, nothing sent to step)
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    valid_actions: list[str] | None = None
    seconds: float = 0.0
    # {"name", "arguments"} when the action was a tool call (sent to execute_tool, not step);
    # stored episodes from before tool use lack the field and read back as None.
    tool_call: dict[str, Any] | None = None
    # Every call when the turn made several (a reference tool-use reply); tool_call is the first.
    tool_calls: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = _fields(self)
        if self.valid_actions is not None:
            data["valid_actions"] = list(self.valid_actions)
        if self.tool_call is not None or self.tool_calls is not None:  # nested arguments: copied whole
            data["tool_call"], data["tool_calls"] = copy.deepcopy((self.tool_call, self.tool_calls))
        return data


@dataclass
class Episode:
    """One play of one environment instance by one agent."""

    env_id: str
    seed: int
    hinted: bool
    turns: list[Turn] = field(default_factory=list)
    final_observation: str = ""
    terminated: bool = False
    truncated: bool = False
    ret: float = 0.0  # by the one return rule (envfile.episode_return)
    failure: str | None = None  # sandbox/agent failure category; None for a clean episode
    failure_message: str = ""
    format_failures: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    group: int = 0  # index of the GRPO group (plays sharing one instance)
    trace_ref: str | None = None  # the agent's opaque reference to its record of the episode (e.g. a token trace)

    @property
    def success(self) -> bool:
        """The contract's success rule (``envfile.is_success``): the full reward; partial credit counts in ``ret`` only."""
        return is_success(self.ret, self.failure)

    @property
    def scored(self) -> bool:
        """Whether the episode may be scored: infrastructure failures never count as losses."""
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """What ``dataclasses.asdict`` gives, built directly: its generic deep copy is most of the cost of
        storing an episode."""
        data = _fields(self)
        data["turns"] = [turn.to_dict() for turn in self.turns]
        data["tokens"] = dict(self.tokens)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        data = dict(data)
        data["turns"] = [Turn(**t) for t in data.get("turns", [])]
        return cls(**data)


def _fields(record: Turn | Episode) -> dict[str, Any]:
    """Its dataclass fields by name, as ``asdict`` reads them (never other attributes), values not copied."""
    return {f.name: getattr(record, f.name) for f in fields(record)}
