"""The agent interface, as the agents implement it (it lives beside the runner that consumes it)."""

from __future__ import annotations

from ..rollout.agent import Agent, Reply, View

__all__ = ["Agent", "Reply", "View"]
