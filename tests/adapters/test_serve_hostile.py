"""`spadegym serve` against hostile clients: a message over the size limit is refused, a megabyte extraction bomb
is one linear step, and sessions left idle are freed, so no client can stall or lock out the others."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("spadegym.adapters.openenv_import", reason="the openenv extra is not installed")

import httpx  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

from spadegym.adapters.openenv_server import MESSAGE_BYTES, http_server  # noqa: E402

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
IDLE_S = 1.0


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The real app (OpenEnv's, behind spadegym's limits) under uvicorn, 4 sessions, idle after 1 s."""
    server = http_server(str(ENVS), port=0, max_sessions=4, idle_timeout_s=IDLE_S, log_level="error")
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


async def ws_step(url: str, message: str) -> dict:
    async with connect(f"ws://{url}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "level_id": "number_guess"}}))
        json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "step", "data": {"message": message}}))
        return json.loads(await ws.recv())


def test_a_message_over_the_size_limit_is_refused_and_the_server_serves_on(url: str) -> None:
    with pytest.raises(ConnectionClosed) as closed:
        asyncio.run(ws_step(url, "x" * MESSAGE_BYTES))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    big = httpx.post(f"http://{url}/step", content=b"{" + b" " * MESSAGE_BYTES + b"}", timeout=30,
                     headers={"content-type": "application/json"})
    assert big.status_code == 413 and "at most 1,048,576 bytes" in big.text
    assert httpx.get(f"http://{url}/health", timeout=30).status_code == 200


@pytest.mark.timeout(120)  # before: the quadratic regexes took hours on this reply, the event loop stalled with them
def test_a_megabyte_extraction_bomb_is_an_ordinary_format_failure(url: str) -> None:
    reply = asyncio.run(ws_step(url, "<think>" * 60_000 + "\\boxed{" * 60_000))
    assert reply["type"] == "observation" and reply["data"]["done"] is False  # no action: a format reminder


def test_a_websocket_session_that_sends_nothing_is_ended(url: str) -> None:
    async def idle() -> None:
        async with connect(f"ws://{url}/ws") as ws:
            await asyncio.wait_for(ws.recv(), 30)  # ended after IDLE_S, not after 30 s

    with pytest.raises(ConnectionClosed):
        asyncio.run(idle())


def test_a_huge_level_id_is_refused_in_one_short_sentence_and_the_session_serves_on(url: str) -> None:
    async def resets() -> tuple[dict, dict]:
        async with connect(f"ws://{url}/ws", max_size=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "level_id": "x" * 100_000}}))
            refused = json.loads(await ws.recv())
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "level_id": "number_guess"}}))
            return refused, json.loads(await ws.recv())

    refused, played = asyncio.run(resets())
    said = refused["data"]["message"]
    assert refused["type"] == "error" and len(said) < 300 and "x" * 41 not in said
    assert f"'{'x' * 40}'... (100,000 characters) is not a level's id" in said and said.endswith("none to draw one.")
    assert played["type"] == "observation" and played["data"]["observation"]["level_id"] == "number_guess"
    over_http = httpx.post(f"http://{url}/reset", json={"seed": 1, "level_id": "y" * 100_000}, timeout=30)
    assert over_http.status_code == 404 and len(over_http.text) < 300 and "(100,000 characters)" in over_http.text
    unknown = httpx.post(f"http://{url}/reset", json={"seed": 1, "level_id": "nope"}, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["detail"].startswith("no level named 'nope'; levels here: ")
