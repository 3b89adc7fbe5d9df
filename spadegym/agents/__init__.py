"""Agents: anything that plays environments (``random``, ``scripted``, ``human``, ``openai``, ``learner``).

Build one from its spec with ``make_agent``; each implements ``base.Agent``.
The agent classes load on first use: importing ``spadegym.agents.base`` (as the
runner does) must not pay for the ``openai`` client.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Agent, Reply, View
from .registry import AgentSpecError, agent_kinds, make_agent

_LAZY = {
    "HumanAgent": "human", "PlayerQuit": "human",
    "OpenAIAgent": "openai_agent", "OpenAIAgentConfig": "openai_agent",
    "RandomAgent": "random_agent",
    "ScriptedAgent": "scripted", "ScriptError": "scripted", "read_script": "scripted",
}

__all__ = ["Agent", "AgentSpecError", "Reply", "View", "agent_kinds", "make_agent", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
