"""`spadegym serve`: HTTP use holds no session, so it never takes the places WebSocket clients need."""

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

from spadegym.adapters.openenv_server import http_server  # noqa: E402

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
SESSIONS = 4


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The real app under uvicorn with 4 sessions; idle sessions are reaped only after 5 minutes."""
    server = http_server(str(ENVS), port=0, max_sessions=SESSIONS, idle_timeout_s=300.0, log_level="error")
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


async def ws_reset(url: str) -> dict:
    async with connect(f"ws://{url}/ws") as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 1, "level_id": "number_guess"}}))
        return json.loads(await asyncio.wait_for(ws.recv(), 10))


def test_http_use_leaves_every_session_to_websocket_clients(url: str) -> None:
    with httpx.Client(base_url=f"http://{url}", timeout=30) as http:
        made = [http.post("/mcp", json={"jsonrpc": "2.0", "id": i, "method": "openenv/session/create", "params": {}})
                .json() for i in range(SESSIONS + 2)]  # more HTTP sessions asked for than the server has places
        played = [http.post("/reset", json={"seed": i, "level_id": "number_guess"}).status_code for i in range(3)]
    replies = asyncio.run(asyncio.wait_for(all_at_once(url), 30))
    assert [r["type"] for r in replies] == ["observation"] * SESSIONS, replies  # at once, no reaper needed
    assert all("result" not in m and "/ws" in m["error"]["message"] for m in made) and played == [200] * 3
    assert [m["id"] for m in made] == list(range(SESSIONS + 2))


async def all_at_once(url: str) -> list[dict]:
    return await asyncio.gather(*(ws_reset(url) for _ in range(SESSIONS)))


def test_an_escaped_method_name_is_refused_as_well(url: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": "x", "method": "openenv\\/session\\/create", "params": {}}'
    made = httpx.post(f"http://{url}/mcp", content=body, headers={"content-type": "application/json"},
                      timeout=30).json()
    assert "error" in made and made["id"] == "x"
    assert asyncio.run(ws_reset(url))["type"] == "observation"
