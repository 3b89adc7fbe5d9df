"""Agents: anything that plays environments (``random``, ``scripted``, ``human``, ``openai``, ``learner``).

Build one from its spec with ``make_agent``; each implements ``base.Agent``.
"""

from .base import Agent, Reply, View
from .human import HumanAgent, PlayerQuit
from .openai_agent import OpenAIAgent, OpenAIAgentConfig
from .random_agent import RandomAgent
from .registry import AgentSpecError, agent_kinds, make_agent
from .scripted import ScriptedAgent, ScriptError, read_script

__all__ = [
    "Agent", "AgentSpecError", "HumanAgent", "OpenAIAgent", "OpenAIAgentConfig", "PlayerQuit",
    "RandomAgent", "Reply", "ScriptError", "ScriptedAgent", "View", "agent_kinds", "make_agent",
    "read_script",
]
