"""The OpenAI agent through the runner, against a real local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest
from rollout_envs import ENDLESS, VAULT

from spadegym.agents import OpenAIAgent, OpenAIAgentConfig
from spadegym.level import Level
from spadegym.llm import EndpointConfig, LLMUnavailable
from spadegym.rollout import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply


def llm_agent(server: FakeOpenAIServer, stop: bool) -> OpenAIAgent:
    endpoint = EndpointConfig(model="fake-model", base_url=server.url, retries=1, backoff_s=0.01, timeout_s=5)
    return OpenAIAgent(endpoint, OpenAIAgentConfig(stop_on_unavailable=stop))


def run(sandbox: Sandbox, source: str, plays: list[Play], agent: OpenAIAgent, max_turns: int = 4) -> list:
    async def go():
        try:
            return await run_episodes(sandbox, {"env": Level(source)}, plays, agent,
                                      RolloutConfig(max_turns=max_turns))
        finally:
            await agent.aclose()
    return asyncio.run(go())


def test_an_llm_plays_wins_and_its_tokens_are_counted(sandbox: Sandbox) -> None:
    def reader(body: dict, index: int) -> str:
        # Reads the code from the latest observation; the first turn of every episode is a miss.
        messages = body["messages"]
        code = re.search(r"door reads (\d+)", messages[1]["content"]).group(1)
        return "<think>not yet</think>\\boxed{000}" if len(messages) == 2 else f"It is \\boxed{{{code}}}"

    with FakeOpenAIServer(reader) as server:
        agent = llm_agent(server, stop=False)
        plays = [Play("env", seed, hinted=hinted) for seed in (1, 2) for hinted in (False, True)]
        episodes = run(sandbox, VAULT, plays, agent)
        served = list(server.requests)
    assert [ep.ret for ep in episodes] == [1.0] * 4 and all(len(ep.turns) == 2 for ep in episodes)
    assert episodes[1].turns[0].observation.endswith("hint: the code is printed on the door")
    hinted_first = [r["messages"][1]["content"] for r in served if len(r["messages"]) == 2]
    assert sum("hint: the code" in text for text in hinted_first) == 2
    completion = sum(len(t.reply) // 4 for ep in episodes for t in ep.turns)
    assert sum(ep.tokens["completion_tokens"] for ep in episodes) == completion
    assert sum(ep.tokens["prompt_tokens"] for ep in episodes) == agent.usage["prompt_tokens"] > 0


@pytest.mark.parametrize("stop", [False, True])
def test_a_server_that_goes_away_mid_run(sandbox: Sandbox, stop: bool) -> None:
    server = FakeOpenAIServer().start()
    url = server.url

    def script(body: dict, index: int) -> str | FakeReply:
        if index < 3:
            return "\\boxed{wait}"
        threading.Thread(target=server.stop).start()
        return FakeReply(drop=True)

    server.script = script
    agent = llm_agent(server, stop)
    plays = [Play("env", 0), Play("env", 1)]
    if stop:
        with pytest.raises(LLMUnavailable) as raised:
            run(sandbox, ENDLESS, plays, agent)
        assert url in str(raised.value)
    else:
        episodes = run(sandbox, ENDLESS, plays, agent)
        assert [ep.failure for ep in episodes] == ["agent", "agent"]
        assert all(url in ep.failure_message and not ep.scored for ep in episodes)
        # Three served replies, then each episode's failed turn (which episode got which depends on timing).
        assert sum(len(ep.turns) for ep in episodes) == 5
    server.stop()


def test_a_slow_reply_delays_only_its_own_episode(sandbox: Sandbox) -> None:
    def script(body: dict, index: int) -> FakeReply:
        slow = "hint:" in body["messages"][1]["content"]  # the first observation tells the episodes apart
        return FakeReply(content="\\boxed{wait}", delay_s=1.0 if slow else 0.0)

    with FakeOpenAIServer(script) as server:
        agent = llm_agent(server, stop=False)
        plays = [Play("env", 0, hinted=True), Play("env", 0, hinted=False)]
        slow, quick = run(sandbox, VAULT, plays, agent, max_turns=3)
        order = ["slow" if "hint:" in r["messages"][1]["content"] else "quick" for r in server.requests]
    assert len(slow.turns) == len(quick.turns) == 3
    # The quick episode played all its turns while the slow one waited for its first reply.
    assert order.index("slow", order.index("slow") + 1) > max(i for i, who in enumerate(order) if who == "quick")
