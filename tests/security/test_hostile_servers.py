"""Hostile OpenAI-compatible servers on 127.0.0.1: whatever a model server returns is data, bounded in bytes, depth
and time before it is parsed or stored, and a broken reply fails that call (an episode, a proposal) in one
sentence while the run goes on."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spadegym.agents import OpenAIAgent, OpenAIAgentConfig, View
from spadegym.designers.base import DesignContext, LevelSummary
from spadegym.designers.llm import BAD_REPLY, LLMDesigner, LLMDesignerConfig
from spadegym.families import get_family
from spadegym.llm import EndpointConfig, LLMClient, LLMReplyError
from spadegym.validate.verdict import Verdict
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

#: A body nested far deeper than Python's decoder recurses.
NESTED = b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
CODE = ("```python\n# a lone surrogate: \ud800\nclass TinyEnv:\n    def reset(self, seed=None):\n"
        "        return 'x', {}\n\n    def step(self, action):\n        return 'x', 1.0, True, False, {}\n```")


def endpoint(server: FakeOpenAIServer, **settings: object) -> EndpointConfig:
    return EndpointConfig(model="m", base_url=server.url, **{"retries": 0, "backoff_s": 0.01, **settings})


def chat(server: FakeOpenAIServer, **settings: object):
    async def run():
        client = LLMClient(endpoint(server, **settings))
        try:
            return await client.chat([{"role": "user", "content": "go"}])
        finally:
            await client.aclose()
    return asyncio.run(run())


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}).encode()


# -- the client: depth, bytes, time ---------------------------------------------------------------------------------

def test_a_deeply_nested_body_is_one_reply_error_naming_the_server() -> None:
    with FakeOpenAIServer(default=FakeReply(raw_body=NESTED)) as server:
        with pytest.raises(LLMReplyError, match="nested too deep") as caught:
            chat(server)
        assert server.url in str(caught.value) and "server is running" not in str(caught.value)


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "undeclared"])
def test_a_reply_over_the_byte_bound_is_refused_without_reading_it_whole(chunked: bool) -> None:
    huge = completion("x" * (20 << 20))  # 20 MB against a bound of 64 KB
    with FakeOpenAIServer(default=FakeReply(raw_body=huge, chunked=chunked)) as server:
        with pytest.raises(LLMReplyError, match="larger than max_reply_bytes"):
            chat(server, max_reply_bytes=1 << 16)
        assert chat_after(server) == "fine"  # the client's slot and the server are fine after it


def chat_after(server: FakeOpenAIServer) -> str:
    server.default = "fine"
    return chat(server).text


def test_a_trickled_reply_is_cut_at_the_call_deadline() -> None:
    trickle = FakeReply(raw_body=completion("slow " * 20), trickle_s=0.2)  # ~20 s byte by byte
    with FakeOpenAIServer(default=trickle) as server:
        started = time.monotonic()
        with pytest.raises(Exception, match=r"timeout_s=1s"):
            chat(server, timeout_s=1.0)
        assert time.monotonic() - started < 3.0  # one deadline, not one per byte read


def test_reply_text_is_made_safe_and_its_fields_typed() -> None:
    body = json.dumps({"choices": [{"message": {"content": "a\ud800b\x1b[2Jc", "reasoning_content": "r\udfff"},
                                    "finish_reason": {"not": "text"}}],
                       "usage": {"prompt_tokens": 1e400, "completion_tokens": [1]}}).encode()
    with FakeOpenAIServer(default=FakeReply(raw_body=body)) as server:
        result = chat(server)
    assert (result.text, result.reasoning, result.finish_reason) == ("a\ufffdbc", "r\ufffd", None)
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0}
    result.text.encode("utf-8")


# -- the agent: an episode's failure, never an aborted eval ----------------------------------------------------------

def play(server: FakeOpenAIServer, turns: int = 2) -> list:
    agent = OpenAIAgent(endpoint(server), OpenAIAgentConfig(stop_on_unavailable=True))

    async def run():
        try:
            return [(await agent.act([View(episode_key="e", observation=f"turn {t}", turn=t)]))[0]
                    for t in range(turns)]
        finally:
            await agent.aclose()
    return asyncio.run(run())


def test_a_surrogate_in_an_agent_reply_does_not_poison_the_next_request() -> None:
    with FakeOpenAIServer(default=FakeReply(content="I go \ud800 \\boxed{north}")) as server:
        first, second = play(server)
        assert len(server.requests) == 2
    assert first.error is None and second.error is None and second.action == "north"
    assert "\ufffd" in first.text


def test_a_nested_agent_reply_fails_that_turn_and_the_eval_goes_on() -> None:
    with FakeOpenAIServer([FakeReply(raw_body=NESTED)], default="\\boxed{east}") as server:
        broken, fine = play(server)  # stop_on_unavailable: a server that is down would raise here
    assert broken.action is None and server.url in broken.error and "server is running" not in broken.error
    assert fine.action == "east"


# -- the designer: that proposal's failure, the run goes on ----------------------------------------------------------

def accept(code: str, hint: str | None, name: str) -> Verdict:
    code.encode("utf-8")  # what a store and a sandbox need of it
    return Verdict.from_dict({"file": name, "valid": True, "category": None, "seconds": 0.0, "checks": []})


def write(server: FakeOpenAIServer, count: int = 1):
    designer = LLMDesigner(endpoint(server), corpus=None, validator=accept)
    return asyncio.run(designer.propose(DesignContext(skill="Mathematical Reasoning", count=count))), designer


def test_a_surrogate_in_a_written_file_is_replaced_not_fatal() -> None:
    with FakeOpenAIServer(default=CODE) as server:
        (made,), _ = write(server)
    assert made.refusal is None and "\ufffd" in made.source and "\ud800" not in made.notes.completion


def test_a_nested_reply_in_write_mode_refuses_that_proposal_only() -> None:
    with FakeOpenAIServer([FakeReply(raw_body=NESTED)], default=CODE) as server:
        made, designer = write(server, count=2)
    refused = [c for c in made if c.refusal is not None]
    assert len(refused) == 1 and refused[0].refusal == BAD_REPLY and len(made) == 2
    assert "nested too deep" in refused[0].verdict.failed[0].message
    assert designer.stats.refused == {BAD_REPLY: 1} and designer.stats.valid == 1


MAZE = get_family("grid_maze")


def edit(server: FakeOpenAIServer, mode: str = "edit"):
    parent = LevelSummary("p0", MAZE.skill, 0.95, 1.0, 0.05, 0.3, family=MAZE.name, knobs=MAZE.level_knobs(0))
    designer = LLMDesigner(endpoint(server), corpus=None, seed=1, config=LLMDesignerConfig(mode=mode))
    return asyncio.run(designer.propose(DesignContext(skill=MAZE.skill, count=1, parents=[parent])))


def test_a_deeply_nested_edit_is_a_malformed_edit() -> None:
    with FakeOpenAIServer(default='{"changes": ' + "[" * 50_000 + "]" * 50_000 + "}") as server:
        (made,) = edit(server)
    assert made.refusal == "malformed_edit"


@pytest.mark.parametrize("mode", ["edit", "code_edit"])
def test_a_surrogate_in_an_edit_reply_is_stored_safely(mode: str) -> None:
    with FakeOpenAIServer(default='\ud800 {"operator": "harder", "changes": {"size": 5}} \ud800') as server:
        (made,) = edit(server, mode)
    made.notes.completion.encode("utf-8")
    assert "\ufffd" in made.notes.completion


def test_spadegym_design_survives_a_surrogate_in_a_written_file(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=CODE) as server:
        done = subprocess.run([sys.executable, "-m", "spadegym", "design", "--designer", f"openai:m@{server.url}",
                               "--count", "1", "--out", str(tmp_path), "--json"],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["proposals"] == 1
