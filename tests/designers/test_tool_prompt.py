"""A tool-use skill asks the LLM designer for a tool-use environment, with an example that passes the gate."""

from __future__ import annotations

from spadegym.designers.memory import MemorySelection
from spadegym.designers.prompts import EXAMPLE_ENV, TOOL_EXAMPLE_ENV, design_messages
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source

EMPTY = MemorySelection([], [], [])


def test_a_tool_use_skill_gets_the_tool_use_contract_and_a_game_skill_keeps_its_own():
    tools = design_messages("Data Retrieval", document=None, memory=EMPTY, picture="p")[1]["content"]
    assert TOOL_EXAMPLE_ENV in tools and "subclass `ToolUseBaseEnv`" in tools
    assert "valid_actions(self)" not in tools and "last \\boxed" not in tools  # the base reads the replies
    games = design_messages("Logical Deduction", document=None, memory=EMPTY, picture="p")[1]["content"]
    assert EXAMPLE_ENV in games and "ToolUseBaseEnv" not in games


def test_the_tool_use_example_passes_the_gate_and_its_solution_wins(sandbox: Sandbox):
    verdict = validate_source(
        TOOL_EXAMPLE_ENV, "example.py", sandbox=sandbox, config=ValidationConfig(random_episodes=4)
    )
    assert verdict.valid, verdict.feedback()
    wins = next(c for c in verdict.checks if c.name == "solution_wins")
    assert wins.passed and wins.message.startswith("feasible")
