"""SPADE reference conventions: files written in each documented style pass the gate and can be won.

Every fixture in tests/fixtures/reference/ follows one convention of the
reference (spade-rl/spade) that ``contract.REFERENCE_CONVENTIONS`` names. Each
must be valid, and winnable by a scripted reply delivered as the reference
delivers it (the reply's last box, re-wrapped for files that parse the box;
``<tool_call>`` blocks and an ``<answer>`` for tool-use games). The files in
broken/ must be refused for the right reason.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spadegym.agents.scripted import ScriptedAgent
from spadegym.envfile.contract import REFERENCE_CONVENTIONS
from spadegym.envfile.reference import solution_sequences
from spadegym.rollout.runner import EnvSpec, Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source
from spadegym.validate.config import DEFAULT_ALLOWED_IMPORTS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reference"
WITH_NUMPY = ValidationConfig(allowed_imports=[*DEFAULT_ALLOWED_IMPORTS, "numpy"])
SEED = 7

# fixture -> (its action format, the convention it shows)
ACCEPTED = {
    "boxed_strict": ("boxed", "boxed_action_delivery"),
    "prose_solution": ("boxed", "prose_solution"),
    "menu_only": ("boxed", "menu_in_observation"),
    "injected_names": ("boxed", "injected_names"),
    "numpy_game": ("boxed", "numpy"),
    "math_verify_answer": ("boxed", "math_verify"),
    "tool_use": ("tool_call", "tool_use_base_class"),
    "required_max_turns": ("boxed", "max_turns_constructor"),
    "partial_credit": ("boxed", "boxed_action_delivery"),
}


def source(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text()


def winning_script(sandbox: Sandbox, name: str) -> list[str]:
    """Replies that win the instance of SEED, written as an LLM would write them for the reference."""
    handle = sandbox.open(source(name), f"{name}.py")
    try:
        assert handle.loaded.ok, handle.loaded.message
        assert handle.reset(seed=SEED).ok
        solution = handle.call("solution").value
    finally:
        handle.close()
    if name == "tool_use":  # every lookup in one reply, then the answer
        calls, answer = solution[0].rsplit("\n", 1)
        return [f"Let me look everything up.\n{calls}", f"<think>sum, times price</think>{answer}"]
    actions = solution_sequences(solution[0])[0] if name == "prose_solution" else solution
    return [f"I will do this: \\boxed{{{action}}}" for action in actions]


def play(sandbox: Sandbox, name: str, script: list[str]):
    async def go():
        spec = EnvSpec(name, source(name), f"{name}.py")
        return await run_episodes(sandbox, {name: spec}, [Play(name, SEED)], ScriptedAgent(script),
                                  RolloutConfig(max_turns=25, concurrency=1))
    return asyncio.run(go())[0]


def test_every_reference_convention_is_named_in_the_contract():
    shown = {convention for _fmt, convention in ACCEPTED.values()}
    assert shown <= set(REFERENCE_CONVENTIONS)
    assert {"boxed_solution_items", "base_class_names", "pool_layout"} <= set(REFERENCE_CONVENTIONS)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_reference_style_file_is_valid_and_winnable(sandbox: Sandbox, name: str):
    verdict = validate_source(source(name), f"{name}.py", sandbox=sandbox, config=WITH_NUMPY)
    assert verdict.valid, verdict.feedback()
    assert not verdict.warnings, verdict.feedback()
    feasible = next(c for c in verdict.checks if c.name == "solution_wins")
    assert feasible.passed and feasible.message.startswith("feasible")
    handle = sandbox.open(source(name), f"{name}.py")
    assert handle.info["action_format"] == ACCEPTED[name][0]
    handle.close()
    episode = play(sandbox, name, winning_script(sandbox, name))
    assert episode.failure is None, episode.failure_message
    assert episode.success and episode.ret == 1.0


def test_a_boxed_file_sees_the_box_the_reference_sends(sandbox: Sandbox):
    episode = play(sandbox, "boxed_strict", ["\\boxed{-1}"])
    assert episode.turns[0].action == "-1"  # the transcript keeps the action...
    assert "Wrong" in episode.final_observation  # ...and step parsed it from \boxed{-1}, not "Use the format"


def test_tool_calls_of_one_reply_run_in_one_turn_and_show_their_output(sandbox: Sandbox):
    script = winning_script(sandbox, "tool_use")
    episode = play(sandbox, "tool_use", script)
    first = episode.turns[0]
    assert len(first.tool_calls) == 5 and first.tool_call == first.tool_calls[0]
    assert first.tool_call == {"name": "list_warehouses", "arguments": {}}
    assert episode.turns[1].observation.startswith("north, east, south\n\n")  # output text, not a dict
    assert "returncode" not in episode.turns[1].observation


def test_a_boxed_answer_reaches_a_tool_use_game_as_an_answer(sandbox: Sandbox):
    calls, answer = winning_script(sandbox, "tool_use")
    value = answer.split("<answer>")[1].split("</answer>")[0]
    won = play(sandbox, "tool_use", [calls, f"The total is \\boxed{{{value}}}."])
    assert won.success and won.turns[1].action == value
    boxed_call = play(sandbox, "tool_use", ['\\boxed{{"name": "list_warehouses", "arguments": {}}}', "no answer"])
    assert boxed_call.turns[0].tool_calls == [{"name": "list_warehouses", "arguments": {}}]
    assert boxed_call.final_observation == "Incorrect. Keep using tools."  # "no answer" was judged as one


def test_reference_tool_turns_do_not_count_toward_the_games_max_turns(sandbox: Sandbox):
    lookup = '<tool_call>{"name": "list_warehouses", "arguments": {}}</tool_call>'
    episode = play(sandbox, "tool_use", [lookup] * 12 + ["<answer>0</answer>"] * 20)
    # 12 tool turns, then answers until the game's own budget (10 answer turns) truncates it.
    assert [t.tool_call is not None for t in episode.turns].count(True) == 12
    assert len(episode.turns) == 22 and episode.truncated and not episode.success
    capped = play(sandbox, "tool_use", [lookup] * 30)
    assert len(capped.turns) == 25 and capped.truncated  # the runner's budget bounds the replies


def test_partial_credit_is_return_not_success(sandbox: Sandbox):
    episode = play(sandbox, "partial_credit", ["\\boxed{set 0}"] * 6)
    assert episode.terminated and episode.ret == pytest.approx(0.7)
    assert not episode.success


def test_numpy_needs_to_be_allowed(sandbox: Sandbox):
    verdict = validate_source(source("numpy_game"), "numpy_game.py", sandbox=sandbox)
    assert [c.name for c in verdict.failed] == ["imports_allowed"]
    assert "--allow-import numpy" in verdict.failed[0].message


BROKEN = {
    "listed_action_wins": ("random_policy_loses", "uniform over the actions the observation lists"),
    "box_in_solution": ("solution_wins", "hold \\boxed{}, which an agent's action never does"),
    "reset_none": ("reset_runs", "reset() must return"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_reference_file_is_refused_for_the_right_reason(sandbox: Sandbox, name: str):
    check, phrase = BROKEN[name]
    path = FIXTURES / "broken" / f"{name}.py"
    verdict = validate_source(path.read_text(), path.name, sandbox=sandbox)
    assert not verdict.valid
    assert verdict.failed[0].name == check and phrase in verdict.failed[0].message, verdict.feedback()


PLAIN_PROSE = """import random

class DayNumberEnv:
    max_turns = 4

    def reset(self, seed=None):
        self.x = random.Random(seed).randint(10, 99)
        return "Say the number of the day.", {}

    def step(self, action):
        won = action.strip() == str(self.x)
        return ("Yes." if won else "No."), (1.0 if won else 0.0), True, False, {}

    def valid_actions(self):
        return [str(i) for i in range(10, 100)]

    def solution(self):
        return f"The number of the day is {self.x + 1}"
"""


def test_a_plain_file_with_a_losing_text_solution_stays_infeasible(sandbox: Sandbox):
    verdict = validate_source(PLAIN_PROSE, "day.py", sandbox=sandbox)
    assert not verdict.valid and verdict.failed[0].name == "solution_wins"
    assert "return the list of actions that wins" in verdict.failed[0].message
    boxed = validate_source(PLAIN_PROSE.replace("import random", "import random\nACTION_FORMAT = 'boxed'"),
                            "day.py", sandbox=sandbox)
    assert [c.name for c in boxed.warnings] == ["solution_wins"]  # a SPADE-style file: unverified
