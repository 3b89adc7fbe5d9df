"""OpenEnv: serve a pool or a live run to OpenEnv and TRL clients (`spadegym serve`).

The app is OpenEnv's own (``create_app``): its HTTP endpoints (``/reset``,
``/step``, ``/state``, ``/schema``, ``/health``) and its WebSocket endpoint
``/ws``, where each connection is one session with its own environment, for as
many steps as the episode lasts. Each session is a ``PlaySession`` whose
environment file runs in a sandbox worker; all sessions share one sandbox
(one zygote), so hundreds of sessions cost hundreds of small workers.

The action is the agent's reply (``message``; its last ``\\boxed{}`` is the
action, as everywhere in spadegym); the observation carries the text, the turn,
the legal actions when the level lists them, and at the end the episode's
return by spadegym's return rule (``metadata["return"]``). ``reset`` takes
``seed`` and optionally ``level_id``; without one it draws a level.

Clients are untrusted: a message (a WebSocket frame, an HTTP body) is at most
``MESSAGE_BYTES``; the reply is read by the contract's linear extraction, in a
session's worker thread, never on the event loop; a session that sends nothing
for ``idle_timeout_s`` is ended and its sandbox worker freed (by ``ClientLimits``;
OpenEnv's reaper as well), so idle clients cannot hold every session. Sessions
are WebSocket connections only: an HTTP request holds none past its own end
(``/reset`` and ``/step`` each play in a fresh one, and OpenEnv's HTTP session
creation over ``/mcp`` is refused), so HTTP use never takes the places that
WebSocket clients need.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any, Literal

from . import openenv_import  # noqa: F401  (first: OpenEnv without its unused web UI)

# isort: split
from fastapi import HTTPException
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field

from ..jsondata import UntrustedJSONError, loads
from ..sandbox import Sandbox
from .level import LevelSourceError
from .levels import LevelSource, open_levels
from .rewards import RewardMode, paid_reward, reward_mode
from .session import PlaySession, Transition, shared_sandbox

#: OpenEnv's default is one session at a time; spadegym's sessions are isolated workers.
DEFAULT_MAX_SESSIONS = 256
#: The largest message a client may send (a WebSocket frame or an HTTP body): room for a long reasoning reply.
MESSAGE_BYTES = 1 << 20
#: Seconds a session may send nothing before it is ended and its worker freed.
IDLE_TIMEOUT_S = 300.0


class SpadegymAction(Action):
    """The agent's reply; the content of its last ``\\boxed{}`` is the action."""

    message: str = Field(..., max_length=MESSAGE_BYTES, description="The agent's reply, e.g. 'I guess \\\\boxed{7}'.")


class SpadegymObservation(Observation):
    """What the agent sees after reset or a step."""

    text: str = Field("", description="The environment's observation (with the hint line in the hint arm).")
    level_id: str = Field("", description="The level being played.")
    turn: int = Field(0, ge=0, description="Turns taken so far in this episode.")
    valid_actions: list[str] | None = Field(None, description="The legal actions now, when the level lists them.")


class SpadegymState(State):
    """The session's episode: which level, which instance, how far."""

    level_id: str | None = None
    seed: int | None = None
    done: bool = True


class SpadegymEnvironment(Environment[SpadegymAction, SpadegymObservation, SpadegymState]):
    """One OpenEnv session over one ``PlaySession``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, levels: LevelSource, *, sandbox: Sandbox | None = None, hinted: bool = False,
                 actions: Literal["boxed", "raw"] = "boxed", max_turns: int = 25, rewards: RewardMode = "step"):
        super().__init__()
        self.session = PlaySession(levels, sandbox=sandbox, actions=actions, hinted=hinted, max_turns=max_turns)
        self.rewards = reward_mode(rewards)
        self._state = SpadegymState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, level_id: str | None = None,
              **kwargs: Any) -> SpadegymObservation:
        try:
            first = self.session.reset(seed=seed, level_id=level_id)
        except LevelSourceError as exc:  # a level the client named that is none here: its sentence, not a bare 500
            raise HTTPException(status_code=404, detail=str(exc)) from None
        self._state = SpadegymState(episode_id=episode_id or uuid.uuid4().hex, step_count=0,
                                    level_id=first.info["level"], seed=first.info["seed"], done=False)
        return _observation(first)

    def step(self, action: SpadegymAction, timeout_s: float | None = None, **kwargs: Any) -> SpadegymObservation:
        if self.session.done:  # 409, not a bare 500: OpenEnv's HTTP /step builds a fresh session per request
            raise HTTPException(status_code=409, detail=NO_EPISODE)
        moved = self.session.step(action.message)
        self._state.step_count += 1
        self._state.done = moved.done
        return _observation(moved, paid_reward(moved, self.rewards))

    @property
    def state(self) -> SpadegymState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from .. import __version__

        return EnvironmentMetadata(name="spadegym", description="spadegym levels: environment files played in a sandbox.",
                                   version=__version__, readme_content=_readme(self.session.source))

    def close(self) -> None:
        self.session.close()


NO_EPISODE = ("this session has no episode in progress: call reset first (OpenEnv's HTTP /reset and /step each run "
              "in a fresh session, so play an episode over the WebSocket /ws, e.g. SpadegymClient(base_url=URL).sync()).")


def _readme(source: LevelSource) -> str:
    """What a client needs to play: the levels, the action, the reward and the return."""
    ids = sorted(level.level_id for level in source.levels())
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    return (f"# spadegym levels\n\n{len(ids)} level(s): {shown}.\n\n"
            "Play an episode over the WebSocket /ws (one session per connection): reset with `seed` and, optionally, "
            "`level_id` (without one a level is drawn), then step with `message`, the agent's reply; the content of "
            "its last \\boxed{} is the action. Each step's reward is the level's reward for that step; at the end "
            "`metadata[\"return\"]` holds the episode's return, its terminal reward (0 when it ran out of turns), "
            "and `metadata[\"success\"]` whether it earned the full reward.\n")


def _observation(moved: Transition, reward: float | None = None) -> SpadegymObservation:
    info = dict(moved.info)
    return SpadegymObservation(text=moved.observation, level_id=info.pop("level") or "", turn=info.pop("turn", 0),
                               valid_actions=info.pop("valid_actions", None), done=moved.done,
                               reward=moved.reward if reward is None else reward, metadata=info)


#: OpenEnv's JSON-RPC method that makes a session over HTTP, held until closed or reaped.
HTTP_SESSION_CREATE = "openenv/session/create"
NO_HTTP_SESSIONS = ("spadegym holds a session only for a WebSocket connection: play over /ws, one session per "
                    "connection (HTTP /reset and /step each run in a fresh one and hold none).")


class ClientLimits:
    """ASGI guard in front of the app: an HTTP body over ``max_bytes`` gets 413 before the app reads any of it,
    an HTTP request to make a session is refused (sessions are WebSocket connections, so HTTP use cannot hold the
    places they need), and a WebSocket session that sends nothing for ``idle_s`` seconds is ended (the app sees
    the client leave)."""

    def __init__(self, app: Any, max_bytes: int = MESSAGE_BYTES, idle_s: float = IDLE_TIMEOUT_S):
        self.app, self.max_bytes, self.idle_s = app, max_bytes, idle_s

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            body = await self._body(scope, receive)
            if body is None:
                await send({"type": "http.response.start", "status": 413,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
                await send({"type": "http.response.body", "body": f"a request body may hold at most {self.max_bytes:,} "
                            "bytes".encode()})
                return
            if _makes_session(scope, body):
                await _json_rpc_refusal(send, body, NO_HTTP_SESSIONS)
                return
            receive = _replay(body, receive)
        elif scope["type"] == "websocket":
            receive = self._idle_ends(receive)
        await self.app(scope, receive, send)

    async def _body(self, scope: dict, receive: Any) -> bytes | None:
        """The whole request body, or None once it passes ``max_bytes`` (a declared length is believed first)."""
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                return None
            if not message.get("more_body"):
                return b"".join(chunks)

    def _idle_ends(self, receive: Any) -> Any:
        async def within_idle_time() -> dict:
            try:
                return await asyncio.wait_for(receive(), self.idle_s)
            except asyncio.TimeoutError:
                return {"type": "websocket.disconnect", "code": 1001}
        return within_idle_time


def _makes_session(scope: dict, body: bytes) -> bool:
    """Whether an HTTP request asks OpenEnv's ``/mcp`` endpoint for a session of its own."""
    if scope.get("method") != "POST" or scope.get("path", "").rstrip("/") != "/mcp":
        return False
    try:
        request = loads(body, "the request")
    except UntrustedJSONError:
        return False  # the app answers it with its own parse error
    return isinstance(request, dict) and request.get("method") == HTTP_SESSION_CREATE


async def _json_rpc_refusal(send: Any, body: bytes, message: str) -> None:
    """A JSON-RPC error answering the request in ``body`` (its id echoed when it has one)."""
    request = loads(body, "the request")
    echoed = request.get("id") if isinstance(request.get("id"), (str, int)) else None
    reply = json.dumps({"jsonrpc": "2.0", "id": echoed, "error": {"code": -32600, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]})
    await send({"type": "http.response.body", "body": reply})


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives the body read already, then whatever the client sends next (a disconnect)."""
    given = False

    async def replayed() -> dict:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replayed


def make_app(levels: LevelSource | str | Path, *, max_sessions: int = DEFAULT_MAX_SESSIONS, hinted: bool = False,
             actions: Literal["boxed", "raw"] = "boxed", max_turns: int = 25, sandbox: Sandbox | None = None,
             rewards: RewardMode = "step", idle_timeout_s: float = IDLE_TIMEOUT_S) -> ClientLimits:
    """OpenEnv's FastAPI app serving ``levels`` (a LevelSource, or a pool / run directory path), behind ``ClientLimits``."""
    source = levels if not isinstance(levels, (str, Path)) else open_levels(levels)
    box = sandbox or shared_sandbox()

    def factory() -> SpadegymEnvironment:
        return SpadegymEnvironment(source, sandbox=box, hinted=hinted, actions=actions, max_turns=max_turns,
                                   rewards=rewards)

    app = create_app(factory, SpadegymAction, SpadegymObservation, env_name="spadegym", state_cls=SpadegymState,
                     concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                          session_timeout=idle_timeout_s))
    return ClientLimits(app, MESSAGE_BYTES, idle_timeout_s)


def http_server(levels: LevelSource | str | Path, *, host: str = "127.0.0.1", port: int = 8000,
                max_sessions: int = DEFAULT_MAX_SESSIONS, hinted: bool = False, rewards: RewardMode = "step",
                idle_timeout_s: float = IDLE_TIMEOUT_S, log_level: str = "warning") -> Any:
    """The uvicorn server of ``make_app``'s app, refusing WebSocket frames over ``MESSAGE_BYTES`` (``server.run()``)."""
    import uvicorn

    app = make_app(levels, max_sessions=max_sessions, hinted=hinted, rewards=rewards, idle_timeout_s=idle_timeout_s)
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=MESSAGE_BYTES))


def serve(levels: LevelSource | str | Path, *, host: str = "127.0.0.1", port: int = 8000,
          max_sessions: int = DEFAULT_MAX_SESSIONS, hinted: bool = False, rewards: RewardMode = "step",
          idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
    """Run the server until interrupted (what ``spadegym serve`` does)."""
    http_server(levels, host=host, port=port, max_sessions=max_sessions, hinted=hinted, rewards=rewards,
                idle_timeout_s=idle_timeout_s).run()
