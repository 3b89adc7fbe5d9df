"""The LLM agent speaks tools natively: the level's tools go out as the API's ``tools``, ``tool_calls`` come
back as actions, against the real local OpenAI-compatible server (``FakeOpenAIServer``) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from spadegym.agents import OpenAIAgent, OpenAIAgentConfig, View
from spadegym.level import Level
from spadegym.llm import EndpointConfig
from spadegym.rollout.runner import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

TRANSFER = Path(__file__).parents[1] / "fixtures" / "reference" / "tool_use_from_import.py"
TOOLS = [
    {
        "name": "stock",
        "description": "Units at a site.",
        "parameters": {"type": "object", "properties": {"site": {"type": "string"}}, "required": ["site"]},
    }
]


def agent_for(server: FakeOpenAIServer, **config: Any) -> OpenAIAgent:
    endpoint = EndpointConfig(model="fake-model", base_url=server.url, retries=0, timeout_s=5.0)
    return OpenAIAgent(endpoint, OpenAIAgentConfig(**config))


def turns(agent: OpenAIAgent, views: list[View]) -> list:
    async def go():
        try:
            return [(await agent.act([v]))[0] for v in views]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def test_tools_go_out_as_the_api_s_tools_and_tool_calls_come_back_as_the_action():
    script = [
        FakeReply(content="Checking.", tool_calls=[{"name": "stock", "arguments": {"site": "alpha"}}]),
        "It holds 12: \\boxed{12}",
    ]
    with FakeOpenAIServer(script) as server:
        first, second = turns(
            agent_for(server), [View("e", "How many at alpha?", tools=TOOLS), View("e", "12", tools=TOOLS)]
        )
        sent, followed = server.requests
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "stock",
                "description": "Units at a site.",
                "parameters": TOOLS[0]["parameters"],
            },
        }
    ]
    assert (
        "JSON schemas" not in sent["messages"][0]["content"]
    )  # the schema travels natively, not in the prompt
    assert json.loads(first.action) == {"name": "stock", "arguments": {"site": "alpha"}}
    assert first.text.endswith('<tool_call>{"name": "stock", "arguments": {"site": "alpha"}}</tool_call>')
    assistant, tool = followed["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "stock", "arguments": '{"site": "alpha"}'}
    assert tool == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "12"}
    assert second.action == "12"


def test_a_level_without_tools_sends_none():
    with FakeOpenAIServer(["\\boxed{a}"]) as server:
        turns(agent_for(server), [View("e", "Pick a.")])
        assert "tools" not in server.requests[0]


def test_a_server_that_refuses_tools_is_asked_again_without_them_and_the_schema_goes_in_the_prompt():
    def script(body: dict, _index: int) -> FakeReply:
        if "tools" in body:
            return FakeReply(status=400, content='"auto" tool choice requires --enable-auto-tool-choice')
        return FakeReply(content='<tool_call>{"name": "stock", "arguments": {"site": "b"}}</tool_call>')

    with FakeOpenAIServer(script) as server:
        agent = agent_for(server)
        first, second = turns(agent, [View("e", "How many at b?", tools=TOOLS), View("e", "3", tools=TOOLS)])
        bodies = server.requests
    assert ["tools" in b for b in bodies] == [True, False, False]  # refused once, then the text protocol
    assert "JSON schemas" in bodies[1]["messages"][0]["content"]
    assert first.error is None and "<tool_call>" in first.text
    assert not agent._native


def test_native_tools_can_be_turned_off():
    with FakeOpenAIServer(["\\boxed{1}"]) as server:
        turns(agent_for(server, native_tools=False), [View("e", "How many?", tools=TOOLS)])
        assert "tools" not in server.requests[0]
        assert "JSON schemas" in server.requests[0]["messages"][0]["content"]


def transfer_player(body: dict, _index: int) -> FakeReply:
    """Wins the transfer game (tool_use_from_import.py) through native tool calls, reading what it is shown."""
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    units, src, dst = re.search(r"Move (\d+) units from (\w+) to (\w+)", first).groups()
    last = body["messages"][-1]
    if last["role"] == "user":
        return FakeReply(
            tool_calls=[
                {"name": "transfer", "arguments": {"source": src, "target": dst, "units": int(units)}}
            ]
        )
    if last["content"].startswith("Moved"):
        return FakeReply(content="Now the count.", tool_calls=[{"name": "stock", "arguments": {"site": dst}}])
    return FakeReply(content=f"<answer>{last['content'].split()[0]}</answer>")


def test_an_openai_agent_wins_a_reference_tool_game_through_native_tool_calls(sandbox: Sandbox):
    with FakeOpenAIServer(transfer_player) as server:
        agent = agent_for(server)

        async def go():
            try:
                return await run_episodes(
                    sandbox,
                    {"t": Level(TRANSFER.read_text())},
                    [Play("t", 3)],
                    agent,
                    RolloutConfig(max_turns=10, concurrency=1),
                )
            finally:
                await agent.aclose()

        (episode,) = asyncio.run(go())
        requests = server.requests
    assert episode.success, episode.final_observation
    assert [t.tool_call["name"] if t.tool_call else None for t in episode.turns] == [
        "transfer",
        "stock",
        None,
    ]
    assert all("tools" in r for r in requests) and len(requests) == 3
    assert [m["role"] for m in requests[-1]["messages"]][-2:] == ["assistant", "tool"]


def inventory_player(body: dict, _index: int) -> FakeReply:
    """Wins a built-in inventory level through native tool calls, reading only what the level shows."""
    shown = body["messages"][-1]["content"]
    item = re.search(r"total units of (\w+)", shown).group(1)
    houses = re.search(r"^warehouses: (.+)$", shown, re.M)
    counted = {h: int(n) for h, n, i in re.findall(r"^(\w+) holds (\d+) (\w+)$", shown, re.M) if i == item}
    if houses is None:
        return FakeReply(tool_calls=[{"name": "list_warehouses", "arguments": {}}])
    todo = [h for h in houses.group(1).split(", ") if h not in counted]
    if todo:
        return FakeReply(tool_calls=[{"name": "count", "arguments": {"warehouse": todo[0], "item": item}}])
    return FakeReply(tool_calls=[{"name": "submit_total", "arguments": {"units": sum(counted.values())}}])


def test_an_openai_agent_wins_a_built_in_tool_use_family_through_native_tool_calls(sandbox: Sandbox):
    from spadegym.families import get_family

    family = get_family("inventory")
    source = family.render(family.level_knobs(1))
    with FakeOpenAIServer(inventory_player) as server:
        agent = agent_for(server)

        async def go():
            try:
                return await run_episodes(
                    sandbox,
                    {"i": Level(source)},
                    [Play("i", 5)],
                    agent,
                    RolloutConfig(max_turns=12, concurrency=1),
                )
            finally:
                await agent.aclose()

        (episode,) = asyncio.run(go())
        names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert episode.success, episode.final_observation
    assert {"list_warehouses", "count", "submit_total"} <= names
    assert [t.tool_call["name"] for t in episode.turns][0] == "list_warehouses"
    assert episode.turns[-1].tool_call["name"] == "submit_total" and episode.format_failures == 0
