"""The LLM client's wire: slot transport reuse and reply reading, against a real local server."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from spadegym.llm import EndpointConfig, LLMClient, LLMUnavailable
from spadegym.llm.transport import SlotTransport
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "go"}]}


def test_slots_are_reused_and_never_exceed_the_requests_in_flight() -> None:
    async def run(url: str) -> tuple[int, int]:
        transport = SlotTransport()
        async with httpx2.AsyncClient(transport=transport) as client:
            for _ in range(3):  # three bursts of four: the same four slots each time
                replies = await asyncio.gather(*(client.post(url + "/chat/completions", json=BODY)
                                                 for _ in range(4)))
                assert [r.status_code for r in replies] == [200] * 4
            burst = transport.slots
        transport = SlotTransport()
        async with httpx2.AsyncClient(transport=transport) as client:
            for _ in range(5):  # one at a time: one slot
                await client.post(url + "/chat/completions", json=BODY)
            return burst, transport.slots

    with FakeOpenAIServer(default=FakeReply(content="ok", delay_s=0.05)) as server:
        assert asyncio.run(run(server.url)) == (4, 1)
        assert len(server.requests) == 17


def test_a_dropped_connection_gives_its_slot_back() -> None:
    async def run(url: str) -> tuple[int, int]:
        transport = SlotTransport()
        async with httpx2.AsyncClient(transport=transport) as client:
            with pytest.raises(httpx2.TransportError):
                await client.post(url + "/chat/completions", json=BODY)
            reply = await client.post(url + "/chat/completions", json=BODY)
            return reply.status_code, transport.slots

    with FakeOpenAIServer([FakeReply(drop=True)], default="fine") as server:
        assert asyncio.run(run(server.url)) == (200, 1)


def client_for(server: FakeOpenAIServer, retries: int = 1) -> LLMClient:
    return LLMClient(EndpointConfig(model="fake-model", base_url=server.url, retries=retries, backoff_s=0.01,
                                    timeout_s=5.0))


def test_reply_text_reasoning_and_token_usage_are_read_and_summed() -> None:
    async def run(client: LLMClient):
        try:
            return [await client.chat([{"role": "user", "content": "x" * 40}]) for _ in range(2)]
        finally:
            await client.aclose()

    script = [FakeReply(content="a" * 8, reasoning_content="because", finish_reason="length"), "b" * 12]
    with FakeOpenAIServer(script) as server:
        client = client_for(server)
        first, second = asyncio.run(run(client))
    assert (first.text, first.reasoning, first.finish_reason) == ("a" * 8, "because", "length")
    assert (second.text, second.reasoning, second.finish_reason) == ("b" * 12, "", "stop")
    assert first.usage == {"prompt_tokens": 10, "completion_tokens": 2}
    assert client.usage == {"prompt_tokens": 20, "completion_tokens": 5}


def test_a_body_that_is_not_a_completion_is_retried_then_named() -> None:
    async def run(client: LLMClient):
        try:
            return await client.chat([{"role": "user", "content": "go"}])
        finally:
            await client.aclose()

    with FakeOpenAIServer([FakeReply(raw_body=b'{"choices": []}'), "\\boxed{up}"]) as server:
        assert asyncio.run(run(client_for(server))).text == "\\boxed{up}"
    with FakeOpenAIServer(default=FakeReply(raw_body=b'{"object": "error"}')) as server:
        client = client_for(server)
        with pytest.raises(LLMUnavailable, match=server.url.replace("/", ".")) as caught:
            asyncio.run(run(client))
        assert "after 2 tries" in str(caught.value)
        assert client.usage == {"prompt_tokens": 0, "completion_tokens": 0}
