"""Tool-use environments end to end: tools shown, tool calls routed to execute_tool, recorded, validated."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_envs import VAULT

from spadegym.agents import OpenAIAgent, OpenAIAgentConfig, make_agent
from spadegym.agents.base import Agent, Reply, View
from spadegym.envfile import ContractError, ToolCall, normalize_tool_result, parse_tool_call
from spadegym.level import Level
from spadegym.llm import EndpointConfig
from spadegym.rollout import Episode, Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, validate_source
from spadegym_testing.fake_server import FakeOpenAIServer

# The agent must look the number up (a tool returning data) before answering, either with the
# submit tool (which returns the step tuple) or with a plain final answer (which goes to step).
LOOKUP = '''
import random

CITIES = ("Oslo", "Lima", "Pune")

class LookupEnv:
    max_turns = 6

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.people = {city: rng.randint(1000, 9999) for city in CITIES}
        self.looked = False
        return "How many people live in Pune? Look it up, then answer.", {}

    def get_tools(self):
        city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        answer = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
        return [
            {"name": "lookup", "description": "The population of a city.", "parameters": city},
            {"type": "function", "function": {"name": "submit", "description": "Give the final answer.",
                                              "parameters": answer}},
        ]

    def execute_tool(self, name, arguments):
        if name == "lookup":
            city = arguments.get("city")
            if city not in self.people:
                return "error: unknown city " + repr(city)
            self.looked = True
            return {"city": city, "population": self.people[city]}
        if name == "submit":
            return self._answer(str(arguments.get("answer")))
        return "error: no tool named " + repr(name)

    def step(self, action):
        return self._answer(action.strip())

    def _answer(self, text):
        if self.looked and text == str(self.people["Pune"]):
            return "Correct.", 1.0, True, False, {}
        return "Wrong answer.", 0.0, False, False, {}

    def solution(self):
        return ['{"name": "lookup", "arguments": {"city": "Pune"}}', str(self.people["Pune"])]
'''

TOOL_RAISES = LOOKUP.replace("class LookupEnv:", "class BuggyEnv:").replace(
    '        if name == "lookup":', '        raise KeyError(name)\n        if name == "lookup":')
BAD_TOOLS = LOOKUP.replace("class LookupEnv:", "class BadToolsEnv:").replace(
    "    def get_tools(self):", "    def get_tools(self):\n        return 'lookup'")
NO_EXECUTE = LOOKUP.replace("class LookupEnv:", "class HalfEnv:").replace(
    "def execute_tool(self, name, arguments):", "def _unused(self, name, arguments):")

LOOKUP_CALL = '{"name": "lookup", "arguments": {"city": "Pune"}}'


class Recording:
    """Any agent, with the views it was shown kept (to check what the runner put in them)."""

    def __init__(self, agent: Agent):
        self.agent, self.views = agent, []
        self.name, self.keeps_history = agent.name, agent.keeps_history
        self.needs_valid_actions, self.lockstep = agent.needs_valid_actions, agent.lockstep

    async def act(self, views: list[View]) -> list[Reply]:
        self.views += views
        return await self.agent.act(views)

    def end_episodes(self, keys: list[str]) -> None:
        self.agent.end_episodes(keys)

    async def aclose(self) -> None:
        await self.agent.aclose()


def scripted(tmp_path: Path, lines: list[str]) -> Recording:
    path = tmp_path / "script.txt"
    path.write_text("# replies of a tool-using agent\n" + "\n".join(lines) + "\n")
    return Recording(make_agent(f"scripted:{path}"))


def play(sandbox: Sandbox, source: str, agent: Agent, seeds: tuple[int, ...] = (0,), **config) -> list[Episode]:
    async def go() -> list[Episode]:
        try:
            return await run_episodes(sandbox, {"env": Level(source)},
                                      [Play("env", s) for s in seeds], agent, RolloutConfig(**config))
        finally:
            await agent.aclose()
    return asyncio.run(go())


def population(observation: str) -> int:
    return json.loads(observation)["population"]


def test_parse_tool_call_is_the_one_rule() -> None:
    assert parse_tool_call(LOOKUP_CALL) == ToolCall("lookup", {"city": "Pune"})
    assert parse_tool_call('{"name": "now"}') == ToolCall("now", {})
    assert parse_tool_call('{"name": "f", "arguments": "{\\"x\\": 1}"}') == ToolCall("f", {"x": 1})
    for action in (None, "", "42", "lookup Pune", "{not json", '{"name": 3}', '{"name": " "}',
                   '{"name": "f", "arguments": [1]}', '{"name": "f", "arguments": "[1]"}',
                   '{"name": "Ada", "age": 36}', '["lookup"]'):
        assert parse_tool_call(action) is None, action


def test_tool_results_are_read_liberally() -> None:
    plain = normalize_tool_result({"population": 5})
    assert (plain.observation, plain.reward, plain.terminated, plain.truncated) == ('{"population": 5}', 0.0,
                                                                                     False, False)
    assert normalize_tool_result("ok").observation == "ok" and normalize_tool_result(None).observation == "null"
    final = normalize_tool_result(("Done.", 1, True, False, {}))
    assert (final.reward, final.terminated) == (1.0, True)
    with pytest.raises(ContractError, match=r"execute_tool\(\) reward"):
        normalize_tool_result(("Done.", "high", True, False, {}))


def test_a_scripted_agent_looks_up_then_submits(sandbox: Sandbox, tmp_path: Path) -> None:
    # Seed 0's population is read from the first play, then replayed by a script that knows it.
    probe = scripted(tmp_path, [LOOKUP_CALL, '{"name": "fly", "arguments": {}}', "0"])
    [first] = play(sandbox, LOOKUP, probe)
    people = population(first.turns[1].observation)
    assert first.turns[2].observation == "error: no tool named 'fly'"
    tools = probe.views[0].tools
    assert [t.get("name") or t["function"]["name"] for t in tools] == ["lookup", "submit"]
    assert tools[0]["parameters"]["required"] == ["city"]

    agent = scripted(tmp_path, [f"I should check. \\boxed{{{LOOKUP_CALL}}}",
                                f'\\boxed{{{{"name": "submit", "arguments": {{"answer": {people}}}}}}}'])
    [ep] = play(sandbox, LOOKUP, agent)
    assert ep.failure is None and ep.terminated and ep.ret == 1.0 and ep.success
    assert [t.tool_call for t in ep.turns] == [{"name": "lookup", "arguments": {"city": "Pune"}},
                                               {"name": "submit", "arguments": {"answer": people}}]
    assert [t.reward for t in ep.turns] == [0.0, 1.0] and not ep.turns[0].terminated
    assert ep.turns[1].observation == json.dumps({"city": "Pune", "population": people})
    assert all(v.tools == tools for v in agent.views)
    assert Episode.from_dict(ep.to_dict()) == ep
    assert ep.to_dict() == dataclasses.asdict(ep)  # what the store kept before to_dict was built directly
    copied = ep.to_dict()
    copied["turns"][0]["tool_call"]["arguments"]["city"] = "Goa"  # the record is a copy, nested arguments too
    assert ep.turns[0].tool_call == {"name": "lookup", "arguments": {"city": "Pune"}}
    old = ep.to_dict()
    for turn in old["turns"]:
        del turn["tool_call"]  # an episode stored before tool use existed
    assert [t.tool_call for t in Episode.from_dict(old).turns] == [None, None]


def test_malformed_tool_calls_and_final_answers_go_to_step(sandbox: Sandbox, tmp_path: Path) -> None:
    [first] = play(sandbox, LOOKUP, scripted(tmp_path, [LOOKUP_CALL]), max_turns=1)
    people = population(first.final_observation)
    bad = '{"name": "lookup", "arguments": ["Pune"]}'
    wire = '{"name": "lookup", "arguments": "{\\"city\\": \\"Pune\\"}"}'  # arguments as a JSON string
    [ep] = play(sandbox, LOOKUP, scripted(tmp_path, [bad, wire, f"It is \\boxed{{{people}}}"]))
    assert [t.action for t in ep.turns] == [bad, wire, str(people)]
    assert [t.tool_call is not None for t in ep.turns] == [False, True, False]
    assert ep.turns[1].observation == "Wrong answer."  # the malformed call reached step as text
    assert ep.failure is None and ep.ret == 1.0  # the final answer reached step too


def test_tool_calls_count_toward_max_turns(sandbox: Sandbox, tmp_path: Path) -> None:
    [ep] = play(sandbox, LOOKUP, scripted(tmp_path, [LOOKUP_CALL] * 8))
    assert len(ep.turns) == 6 and ep.truncated and not ep.terminated and ep.ret == 0.0 and ep.scored


def test_a_tool_call_shaped_action_is_an_action_where_there_are_no_tools(sandbox: Sandbox, tmp_path: Path) -> None:
    agent = scripted(tmp_path, [LOOKUP_CALL])
    [ep] = play(sandbox, VAULT, agent, max_turns=1)
    assert agent.views[0].tools is None
    assert ep.failure is None and ep.turns[0].tool_call is None and ep.final_observation == "Wrong code."


def test_tool_errors_are_environment_failures(sandbox: Sandbox, tmp_path: Path) -> None:
    [raised] = play(sandbox, TOOL_RAISES, scripted(tmp_path, [LOOKUP_CALL]))
    assert raised.failure == "exception" and not raised.scored
    assert raised.failure_message.startswith("execute_tool: KeyError")
    assert raised.turns[0].tool_call == {"name": "lookup", "arguments": {"city": "Pune"}}
    [bad] = play(sandbox, BAD_TOOLS, scripted(tmp_path, [LOOKUP_CALL]))
    assert bad.failure == "invalid_return" and "get_tools() must return a list" in bad.failure_message
    [half] = play(sandbox, NO_EXECUTE, scripted(tmp_path, [LOOKUP_CALL]))
    assert half.failure == "invalid_return" and "no execute_tool" in half.failure_message


def test_an_llm_sees_the_tools_and_plays_with_them(sandbox: Sandbox) -> None:
    def model(body: dict, index: int) -> str:
        last = body["messages"][-1]["content"]
        found = re.search(r'"population": (\d+)', last)
        if found:
            return f'<think>found it</think>\\boxed{{{{"name": "submit", "arguments": {{"answer": {found[1]}}}}}}}'
        return f"Let me look it up. \\boxed{{{LOOKUP_CALL}}}"

    with FakeOpenAIServer(model) as server:
        endpoint = EndpointConfig(model="fake-model", base_url=server.url, retries=1, backoff_s=0.01, timeout_s=5)
        episodes = play(sandbox, LOOKUP, OpenAIAgent(endpoint, OpenAIAgentConfig()), seeds=(1, 2))
        served = list(server.requests)
    assert [ep.ret for ep in episodes] == [1.0, 1.0] and all(len(ep.turns) == 2 for ep in episodes)
    assert [t.tool_call["name"] for ep in episodes for t in ep.turns] == ["lookup", "submit"] * 2
    system = served[0]["messages"][0]
    assert system["role"] == "system" and "This game is played with tools" in system["content"]
    assert {t["function"]["name"] for t in served[0]["tools"]} == {"lookup", "submit"}  # the API's tools
    # The tool's result came back to the model as the next user message.
    assert served[-1]["messages"][-1]["content"].startswith('{"city": "Pune", "population": ')


def test_the_gate_plays_tool_calls_and_checks_get_tools(sandbox: Sandbox) -> None:
    config = ValidationConfig(random_episodes=2, random_workers=1)
    good = validate_source(LOOKUP, "lookup.py", sandbox=sandbox, config=config)
    assert good.valid, good.feedback()
    assert {"tools_listed", "solution_wins"} <= {c.name for c in good.checks if c.passed}
    bad = validate_source(BAD_TOOLS, "bad.py", sandbox=sandbox, config=config)
    failed = {c.name: c for c in bad.checks if not c.passed}
    assert not bad.valid and failed["tools_listed"].category == "invalid_return"
    assert "get_tools()" in failed["tools_listed"].message
    half = validate_source(NO_EXECUTE, "half.py", sandbox=sandbox, config=config)
    assert not half.valid and "no execute_tool" in {c.name: c for c in half.checks}["tools_listed"].message


def test_a_person_plays_a_tool_game_through_the_cli(tmp_path: Path) -> None:
    env = tmp_path / "lookup.py"
    env.write_text(LOOKUP)
    done = subprocess.run([sys.executable, "-m", "spadegym", "play", str(env), "--agent", "human", "--json"],
                          input=f"{LOOKUP_CALL}\n" * 6, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "lookup The population of a city." in done.stderr and "submit Give the final answer." in done.stderr
    episode = json.loads(done.stdout)
    assert episode["truncated"] and len(episode["turns"]) == 6
    assert all(t["tool_call"] == {"name": "lookup", "arguments": {"city": "Pune"}} for t in episode["turns"])
    assert '"population": ' in episode["turns"][1]["observation"]
