"""The LLM agent against a real OpenAI-compatible HTTP server on 127.0.0.1 (scripted replies)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from spadegym.agents import OpenAIAgent, OpenAIAgentConfig, View
from spadegym.llm import EndpointConfig, LLMUnavailable
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply


def agent_for(server: FakeOpenAIServer, stop: bool = False, episode_timeout_s: float | None = None,
              **endpoint: object) -> OpenAIAgent:
    settings = {"retries": 2, "backoff_s": 0.01, "timeout_s": 5.0, **endpoint}
    return OpenAIAgent(EndpointConfig(model="fake-model", base_url=server.url, **settings),
                       OpenAIAgentConfig(stop_on_unavailable=stop, episode_timeout_s=episode_timeout_s))


def play_one(agent: OpenAIAgent, observation: str = "You are in a room.", key: str = "e0", **view: object):
    async def run():
        try:
            return (await agent.act([View(episode_key=key, observation=observation, **view)]))[0]
        finally:
            await agent.aclose()
    return asyncio.run(run())


@pytest.mark.parametrize("content, action", [
    ("<think>maybe \\boxed{west}?</think> I will go \\boxed{north}", "north"),
    ("first \\boxed{a}, no wait: \\boxed{b}", "b"),
    ("the set is \\boxed{f{x}, {y}}", "f{x}, {y}"),
    ("<think>\\boxed{only in thought}</think>no box here", None),
    ("I have no idea.", None),
])
def test_action_is_the_last_box_outside_thinking(content: str, action: str | None) -> None:
    with FakeOpenAIServer([content]) as server:
        reply = play_one(agent_for(server))
    assert reply.action == action
    assert reply.error is None  # an unparseable reply is a format failure, not an error
    assert reply.text == content


def test_split_reasoning_content_is_kept_in_the_transcript_but_never_parsed() -> None:
    script = [FakeReply(content="so \\boxed{east}", reasoning_content="hmm, \\boxed{west}"),
              FakeReply(content="I cannot decide", reasoning_content="it is \\boxed{south}")]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(server)
        first = play_one(agent, key="a")
        agent = agent_for(server)
        second = play_one(agent, key="b")
    assert first.action == "east"
    assert "hmm, \\boxed{west}" in first.text and first.text.startswith("<think>")
    assert second.action is None


def test_malformed_bodies_and_server_errors_are_retried_until_a_good_reply() -> None:
    script = [FakeReply(raw_body=b"<html>gateway says no</html>"), FakeReply(status=500),
              FakeReply(status=429), "\\boxed{ok}"]
    with FakeOpenAIServer(script) as server:
        reply = play_one(agent_for(server, retries=3))
        assert len(server.requests) == 4
    assert reply.action == "ok" and reply.error is None


def test_garbage_forever_is_one_clear_error_naming_the_url() -> None:
    with FakeOpenAIServer(default=FakeReply(raw_body=b"\x00garbage")) as server:
        reply = play_one(agent_for(server, retries=1))
        url = server.url
    assert reply.action is None
    assert reply.error is not None and url in reply.error and "\n" not in reply.error


def test_a_reply_slower_than_the_call_deadline_is_retried() -> None:
    with FakeOpenAIServer([FakeReply(content="\\boxed{late}", delay_s=2.0), "\\boxed{quick}"]) as server:
        reply = play_one(agent_for(server, timeout_s=0.3))
    assert reply.action == "quick"


def test_the_episode_deadline_ends_the_episode_as_an_agent_error() -> None:
    with FakeOpenAIServer(default=FakeReply(content="\\boxed{slow}", delay_s=1.0)) as server:
        reply = play_one(agent_for(server, episode_timeout_s=0.3))
        url = server.url
    assert reply.action is None
    assert "0.3s budget" in reply.error and url in reply.error


def test_a_server_that_goes_away_gives_an_error_or_stops_cleanly() -> None:
    server = FakeOpenAIServer(default="\\boxed{go}").start()
    url = server.url
    keep_going = agent_for(server, retries=1)
    stopping = agent_for(server, stop=True, retries=1)

    async def run():
        [first] = await keep_going.act([View("k", "obs")])
        await stopping.act([View("s", "obs")])
        server.stop()
        [after] = await keep_going.act([View("k", "obs again")])
        with pytest.raises(LLMUnavailable) as raised:
            await stopping.act([View("s", "obs again")])
        await keep_going.aclose()
        await stopping.aclose()
        return first, after, str(raised.value)

    first, after, message = asyncio.run(run())
    assert first.action == "go"
    assert after.action is None and url in after.error and "running" in after.error
    assert url in message


def test_the_conversation_is_kept_verbatim_per_episode_and_forgotten_at_its_end() -> None:
    with FakeOpenAIServer(["<think>x</think>\\boxed{1}", "\\boxed{2}", "\\boxed{3}"]) as server:
        agent = agent_for(server)

        async def run():
            await agent.act([View("e", "first obs\nhint: go left", valid_actions=["1", "2"], max_turns=5)])
            await agent.act([View("e", "second obs", turn=1, max_turns=5)])
            agent.end_episodes(["e"])
            await agent.act([View("e", "new episode")])
            await agent.aclose()

        asyncio.run(run())
        first, second, third = (r["messages"] for r in server.requests)
    assert first[0]["role"] == "system" and "\\boxed{}" in first[0]["content"]
    assert first[1]["content"].startswith("first obs\nhint: go left")
    assert "Valid actions: 1, 2." in first[1]["content"] and "Turn 1 of 5." in first[1]["content"]
    # The second request extends the first one exactly (prefix caching), reasoning removed.
    assert second[:2] == first
    assert second[2] == {"role": "assistant", "content": "\\boxed{1}"}
    assert second[3]["content"].startswith("second obs")
    assert len(third) == 2 and third[1]["content"] == "new episode"


def test_tools_reach_the_model_and_a_boxed_json_call_is_still_the_action() -> None:
    tools = [{"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    with FakeOpenAIServer(['\\boxed{{"name": "lookup", "arguments": {"q": "x"}}}']) as server:
        reply = play_one(agent_for(server), tools=tools)
        request = server.requests[0]
    assert request["tools"][0]["function"]["name"] == "lookup"  # natively (tests/agents/test_openai_tools.py)
    assert "<tool_call>" in request["messages"][0]["content"]
    assert reply.action == '{"name": "lookup", "arguments": {"q": "x"}}'


def test_token_usage_is_recorded_per_reply_and_in_total() -> None:
    replies = ["\\boxed{a}" * 10, "\\boxed{bb}" * 30]
    with FakeOpenAIServer(replies) as server:
        agent = agent_for(server)

        async def run():
            out = await agent.act([View("x", "o" * 400), View("y", "p" * 800)])
            usage = agent.usage
            await agent.aclose()
            return out, usage

        out, usage = asyncio.run(run())
        served = server.requests
    # The fake server counts 4 characters per token; which request got which reply depends on arrival.
    completions = sorted(r.tokens["completion_tokens"] for r in out)
    assert completions == sorted(len(text) // 4 for text in replies)
    prompts = [sum(len(m["content"]) for m in body["messages"]) // 4 for body in served]
    assert sorted(r.tokens["prompt_tokens"] for r in out) == sorted(prompts)
    assert usage == {"prompt_tokens": sum(prompts), "completion_tokens": sum(completions)}


def test_concurrency_limit_is_respected() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def script(body: dict, index: int) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.1)
        with lock:
            state["now"] -= 1
        return f"\\boxed{{{index}}}"

    with FakeOpenAIServer(script) as server:
        agent = agent_for(server, concurrency=3)

        async def run():
            out = await agent.act([View(f"e{i}", "obs") for i in range(10)])
            await agent.aclose()
            return out

        replies = asyncio.run(run())
        assert len(server.requests) == 10
    assert state["peak"] == 3
    assert sorted(int(r.action) for r in replies) == list(range(10))
