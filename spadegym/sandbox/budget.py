"""An environment handle's budgets: sandbox time and text per episode, and a deadline its owner set.

The transport charges every finished request to its budget (``transport.Budget``); the handle asks
the budget how long its next request may take. An episode runs from one reset to the next.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from . import protocol
from .config import SandboxConfig


@dataclass
class EpisodeBudget:
    """``episode_budget_s`` of sandbox time and ``episode_chars`` of text per episode; ``deadline``
    (a ``time.perf_counter()`` value, e.g. a verdict's budget) that no request outlives."""

    config: SandboxConfig
    deadline: float | None = None
    spent: float = 0.0  # sandbox seconds the current episode used
    chars: int = 0  # characters of text its replies brought

    def new_episode(self) -> None:
        self.spent, self.chars = 0.0, 0

    def limit(self, timeout: float, op: str, episode: bool = True) -> tuple[float, str]:
        """The time the next request may take (at most ``timeout``), and what limits it when that is less."""
        limit, why = timeout, ""
        if episode and self.config.episode_budget_s - self.spent < limit:
            limit = self.config.episode_budget_s - self.spent
            why = (f"the episode used up its sandbox time budget (sandbox.episode_budget_s = "
                   f"{self.config.episode_budget_s:g}s) during {op}")
        if self.deadline is not None and self.deadline - time.perf_counter() < limit:
            limit = self.deadline - time.perf_counter()
            why = f"{op} ran past the time budget its caller set (e.g. validation.verdict_budget_s)"
        return limit, why

    def cap(self) -> float:
        """The deadline no request outlives, however late it starts."""
        return math.inf if self.deadline is None else self.deadline

    def charge(self, op: str, seconds: float, outcome: protocol.Outcome) -> protocol.Outcome:
        """Count a finished request against the episode's time and text budgets."""
        self.spent += seconds
        if outcome.ok:
            self.chars += text_size(outcome.value) + len(outcome.output)
            if self.chars > self.config.episode_chars:
                return protocol.failure(protocol.TOO_LARGE, f"the episode's replies brought more than "
                                        f"{self.config.episode_chars:,} characters of text (sandbox.episode_chars) "
                                        f"by {op}", outcome.seconds, outcome.output)
        return outcome


def text_size(value: Any) -> int:
    """Characters of text a checked reply value brings (observation, menu, hint, solution)."""
    kind = type(value)  # checked values hold plain str, list and dict (schema copies them)
    if kind is str:
        return len(value)
    if kind is list:
        return sum([len(v) for v in value if type(v) is str])
    if kind is dict:
        return text_size(value.get("observation")) + text_size(value.get("valid_actions")) + text_size(value.get("hint"))
    return 0
