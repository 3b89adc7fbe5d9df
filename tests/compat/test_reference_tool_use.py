"""Tool games written to the SPADE reference's tool-use prompt: the gate plays them as tool games.

The fixtures under tests/fixtures/reference/ (``tool_use_*``) are the variants
a user of the reference writes: the base imported with ``from ... import``, an
own ``__init__`` with a custom schema (tuples, a set, ``...``), a ``datetime``
calendar, the order-desk baseline, a game whose prose solution the gate cannot
play. Each is valid and its winning tool-call script wins through the rollout;
the broken ones are refused for what they are, in one sentence.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.agents.scripted import ScriptedAgent
from spadegym.envfile.reference import tool_plan
from spadegym.level import Level
from spadegym.rollout.runner import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reference"
CHEAP = ValidationConfig(random_episodes=6)
SEED = 7


def source(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text()


def tagged(call: str) -> str:
    return f"<tool_call>{call}</tool_call>"


def instance(sandbox: Sandbox, name: str) -> tuple[str, str, list[dict]]:
    """First observation, solution() text and tools of the instance of SEED."""
    handle = sandbox.open(source(name), f"{name}.py")
    try:
        reset = handle.reset(seed=SEED, want=["tools"])
        assert reset.ok, reset.message
        return reset.value["observation"], handle.call("solution").value[0], reset.value["tools"]
    finally:
        handle.close()


def locker_script(sandbox: Sandbox) -> list[str]:
    """The locker game's win, found by calling its tools as an agent would (its solution is prose)."""
    handle = sandbox.open(source("tool_use_no_solution"), "tool_use_no_solution.py")
    try:
        observation = handle.reset(seed=SEED).value["observation"]
        owner = next(w for w in ("kim", "lee", "ray", "sam") if f"locker {w} rents" in observation)
        lockers = handle.tool("lockers_of", {"owner": owner}).value["observation"].split(", ")
        best = max(lockers, key=lambda k: int(k[1:]))
        code = handle.tool("code", {"locker": best}).value["observation"]
    finally:
        handle.close()
    calls = [
        json.dumps({"name": "lockers_of", "arguments": {"owner": owner}}),
        json.dumps({"name": "code", "arguments": {"locker": best}}),
    ]
    return [tagged(c) for c in calls] + [f"<answer>{code}</answer>"]


def winning_script(sandbox: Sandbox, name: str) -> list[str]:
    """Replies that win the instance of SEED, in the reference's text protocol."""
    if name == "tool_use_no_solution":
        return locker_script(sandbox)
    _observation, solution, tools = instance(sandbox, name)
    if name == "tool_use_own_init":  # its solution is already <tool_call> blocks and the answer
        return solution.split("\n")
    *calls, answer = tool_plan(solution, tools)
    if name == "tool_use_from_import":  # every call in one reply
        return ["\n".join(tagged(c) for c in calls), answer]
    return [tagged(c) for c in calls] + [answer]


def play(sandbox: Sandbox, name: str, script: list[str], text: str | None = None):
    async def go():
        return await run_episodes(
            sandbox,
            {name: Level(text or source(name))},
            [Play(name, SEED)],
            ScriptedAgent(script, replies=True),
            RolloutConfig(max_turns=25, concurrency=1),
        )

    return asyncio.run(go())[0]


# fixture -> the warnings its verdict carries
ACCEPTED = {
    "tool_use_from_import": (),
    "tool_use_own_init": (),
    "tool_use_calendar": (),
    "tool_use_order_desk": (),
    "tool_use_no_solution": ("solution_wins", "reward_varies"),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_tool_game_in_the_reference_s_style_is_valid_and_its_tool_calls_win(sandbox: Sandbox, name: str):
    verdict = validate_source(source(name), f"{name}.py", sandbox=sandbox, config=CHEAP)
    assert verdict.valid, verdict.feedback()
    assert [c.name for c in verdict.warnings] == list(ACCEPTED[name]), verdict.feedback()
    if not ACCEPTED[name]:
        wins = next(c for c in verdict.checks if c.name == "solution_wins")
        assert wins.message.startswith("feasible"), wins.message
    episode = play(sandbox, name, winning_script(sandbox, name))
    assert episode.failure is None, episode.failure_message
    assert episode.success, episode.final_observation
    assert any(t.tool_call is not None for t in episode.turns)  # won through its tools


def test_a_tool_game_whose_solution_the_gate_cannot_play_is_probed_through_its_tools(sandbox: Sandbox):
    """Bare answers all hear "Incorrect": only the tool calls show the game reads its replies, so the
    verdict is "feasibility unverified" (a warning), not "ignores its action"."""
    verdict = validate_source(source("tool_use_no_solution"), "x.py", sandbox=sandbox, config=CHEAP)
    varies = next(c for c in verdict.checks if c.name == "reward_varies")
    assert "its tools' schemas" in varies.message and not varies.blocking
    random = next(c for c in verdict.checks if c.name == "random_policy_loses")
    assert random.passed


BROKEN = {
    "tool_use_inert": ("reward_varies", "No tool call changes anything"),
    "tool_raises_on_bad_call": ("robust_to_bad_actions", "execute_tool('deposit'"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_tool_game_is_refused_in_one_sentence(sandbox: Sandbox, name: str):
    check, phrase = BROKEN[name]
    verdict = validate_source(
        (FIXTURES / "broken" / f"{name}.py").read_text(), f"{name}.py", sandbox=sandbox, config=CHEAP
    )
    assert not verdict.valid
    assert verdict.failed[0].name == check and phrase in verdict.failed[0].message, verdict.feedback()
    assert "\n" not in verdict.failed[0].message


@pytest.mark.parametrize(
    "body",
    [
        "    def _calc(self, text):\n        return eval(text.strip())\n\n"
        "    def step(self, action):\n        won = self._calc(action) == 4\n",
        "    def check(self):\n        return eval(self.last) == 4\n\n"
        "    def step(self, action):\n        self.last = action.strip()\n        won = self.check()\n",
    ],
)
def test_eval_of_the_action_through_a_helper_or_an_attribute_is_refused(body: str):
    code = (
        "class CalcEnv:\n    def reset(self, seed=None):\n        return 'Make 4.', {}\n\n"
        + body
        + "        return 'ok', float(won), True, False, {}\n"
    )
    verdict = validate_source(code, "calc.py")
    assert verdict.failed[0].name == "no_forbidden_names", verdict.feedback()
    assert "agent's action" in verdict.failed[0].message
    assert validate_source(code.replace("eval", "evaluate"), "calc.py").failed[0].name != "no_forbidden_names"


def test_a_bare_reference_to_eval_is_still_refused():
    code = (
        "class AEnv:\n    def reset(self, seed=None):\n        self.f = eval\n        return 'a', {}\n"
        "    def step(self, action):\n        return 'a', 0.0, True, False, {}\n"
    )
    assert "uses `eval`" in validate_source(code, "a.py").failed[0].message


def test_a_prose_plan_with_placeholders_sets_and_tuples_reads_as_json_calls():
    tools = [{"function": {"name": "add", "parameters": {"properties": {"k": {}}}}}]
    plan = tool_plan(
        "1. add(k=...) 2. add(k={2, 1}) 3. add(k=(1, 2)) 4. add(k=b'x') 5. add(3) ANSWER: 9", tools
    )
    assert plan == [
        '{"name": "add", "arguments": {"k": [1, 2]}}',
        '{"name": "add", "arguments": {"k": [1, 2]}}',
        '{"name": "add", "arguments": {"k": 3}}',
        "<answer>9</answer>",
    ]


def test_validate_ends_in_a_verdict_on_a_prose_plan_with_an_ellipsis(tmp_path: Path):
    """The traceback of the issue: `TypeError: Object of type ellipsis is not JSON serializable`."""
    path = tmp_path / "game.py"
    path.write_text(source("tool_use_from_import"))
    done = subprocess.run(
        [sys.executable, "-m", "spadegym", "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert done.stdout.startswith("valid")
