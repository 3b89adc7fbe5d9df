"""One OpenEnv session over WebSocket, held to the limits of a sandboxed file.

A remote level's server is as untrusted as a file: OpenEnv's own client trusts it (frames of
100 MB, redirects to any origin, the next frame taken as the reply to whatever was asked).
``Session`` speaks OpenEnv's wire format (``{"type": "reset" | "step", "data": ...}``, one
``{"type": "observation", "data": ...}`` frame per request) with these rules:

- it connects to ``URL/ws`` and follows a redirect only within the same origin;
- a frame is at most ``SandboxConfig.line_limit`` bytes, as a worker's reply line;
- each request takes exactly one frame as its reply; a frame the server sent unasked is a
  protocol failure, never paired with a later request;
- a reply is checked as a worker's is (``sandbox.schema``): JSON without NaN, a finite
  reward, the observation and the menu within the sandbox's limits.

Two kinds of failure: ``WireFault`` (the connection was refused, dropped or answered with an
error frame: infrastructure, which the host retries and counts) and ``Rejected`` (what the server
sent breaks a rule: the level's failure, scored).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any

from ..errors import UserError, install_hint
from ..sandbox import protocol, schema
from ..sandbox.schema import Limits, Rejected

_TEXT_FIELDS = ("text", "prompt", "message", "observation", "content")
_MESSAGE_TOO_BIG = 1009  # the WebSocket close code for a frame over the size limit


class WireFault(Exception):
    """The connection failed (refused, dropped, an error frame): infrastructure, not the level's doing."""


def observation_text(observation: Any) -> str:
    """The text an agent reads from an OpenEnv observation: its text field, else the whole observation as JSON."""
    if isinstance(observation, dict):
        for key in _TEXT_FIELDS:
            if isinstance(observation.get(key), str):
                return observation[key]
        return json.dumps({k: v for k, v in observation.items() if k != "metadata"}, sort_keys=True, default=str)
    return str(observation)


def ws_url(url: str) -> str:
    """The WebSocket endpoint of an OpenEnv server's base URL."""
    scheme, rest = url.split("://", 1) if "://" in url else ("http", url)
    scheme = {"http": "ws", "https": "wss"}.get(scheme, scheme)
    return f"{scheme}://{rest.rstrip('/')}/ws"


def _origin(uri: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(uri)
    secure = parts.scheme in ("wss", "https")
    return ("wss" if secure else "ws", (parts.hostname or "").lower(), parts.port or (443 if secure else 80))


class _OtherOrigin(Exception):
    """The server redirected to another origin."""


def _connector(url: str) -> Any:
    """websockets' ``connect`` (OpenEnv's WebSocket library), refusing a redirect to another origin."""
    try:
        from websockets.asyncio.client import connect
    except ImportError as exc:
        raise UserError(f"playing or checking the OpenEnv server at {url} needs OpenEnv ({exc}); "
                        f"install it with {install_hint('openenv')}.") from None

    class SameOriginConnect(connect):  # type: ignore[misc, valid-type]
        def process_redirect(self, exc: Exception) -> Exception | str:
            target = super().process_redirect(exc)
            if isinstance(target, str) and _origin(target) != _origin(self.uri):
                return _OtherOrigin(f"the server redirected to another origin ({target[:200]}); a remote "
                                    "level is played only at the URL its run names")
            return target

    return SameOriginConnect


def _local(uri: str) -> bool:
    return _origin(uri)[1] in ("127.0.0.1", "localhost", "::1")


class Session:
    """One OpenEnv session: ``await open()``, then ``reset`` and ``step``, each one request and one checked reply.

    OpenEnv's frames carry no request ids, so each request goes out with a ``state`` request behind it: its
    reply (a ``state`` or ``error`` frame) closes the request's turn. One observation frame comes before it,
    or a frame came unasked, and the session fails rather than pair that frame with a later request.
    """

    def __init__(self, url: str, limits: Limits, frame_bytes: int, connect_timeout_s: float = 10.0):
        self.url, self.limits, self.frame_bytes = url, limits, frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self._ws: Any = None
        self._frames: asyncio.Queue = asyncio.Queue()  # frames as they come; _END once the connection ended
        self._lost: BaseException | None = None  # how it ended
        self._reader: asyncio.Task | None = None

    async def open(self) -> None:
        uri = ws_url(self.url)
        options: dict[str, Any] = {"proxy": None} if _local(uri) else {}
        connect = _connector(self.url)
        try:
            self._ws = await connect(uri, open_timeout=self.connect_timeout_s, max_size=self.frame_bytes,
                                     ping_interval=None, **options)
        except _OtherOrigin as exc:
            raise Rejected(protocol.PROTOCOL, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - refused, unreachable, a bad handshake
            raise WireFault(_say(exc)) from None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            async for frame in self._ws:
                self._frames.put_nowait(frame)
        except Exception as exc:  # noqa: BLE001 - the connection ended: the waiting request learns how
            self._lost = exc
        self._lost = self._lost or WireFault("the server closed the session")
        self._frames.put_nowait(_END)

    async def _next(self) -> dict[str, Any]:
        frame = await self._frames.get()
        if frame is _END:
            self._frames.put_nowait(_END)  # every later request learns it too
            raise _fault(self._lost or WireFault("the session ended"), self.frame_bytes)
        return _message(frame)

    async def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._ws is None:
            raise WireFault("the session is not open")
        if self._frames.qsize() > (self._lost is not None):  # a frame waits that no request asked for
            raise _unasked()
        try:
            await self._ws.send(json.dumps(message))
            await self._ws.send(_BARRIER)
        except Exception as exc:  # noqa: BLE001 - the connection failed under the request
            raise _fault(exc, self.frame_bytes) from None
        reply = _observation_data(await self._next())
        if (await self._next()).get("type") == "observation":
            raise _unasked()
        return reply

    async def reset(self, seed: int | None, **args: Any) -> dict[str, Any]:
        """The checked reply to a reset: observation, info, valid_actions (when the observation lists them)."""
        data = await self._ask({"type": "reset", "data": {"seed": seed, **args}})
        return schema.check_value("reset", None, _reply(data, moved=False), self.limits)

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        """The checked reply to a step: also a finite reward, and OpenEnv's ``done`` as termination."""
        data = await self._ask({"type": "step", "data": action})
        return schema.check_value("step", None, _reply(data, moved=True), self.limits)

    async def close(self) -> None:
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            await asyncio.wait_for(ws.send(json.dumps({"type": "close"})), 2)
        except Exception:  # noqa: BLE001, S110 - a session already gone is closed
            pass
        try:
            await asyncio.wait_for(ws.close(), 5)
        except Exception:  # noqa: BLE001, S110
            pass
        if self._reader is not None:
            self._reader.cancel()


_BARRIER = json.dumps({"type": "state"})
_END = object()


def _unasked() -> Rejected:
    return Rejected(protocol.PROTOCOL, "the server sent a frame that no request asked for (OpenEnv answers "
                    "each request with one frame)")


def _say(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _fault(exc: BaseException, frame_bytes: int) -> Exception:
    """A failure under a request: a frame over the size limit is the server's; anything else is the wire's."""
    if isinstance(exc, (WireFault, Rejected)):
        return exc
    sent = getattr(exc, "sent", None)
    if getattr(sent, "code", None) == _MESSAGE_TOO_BIG:
        return Rejected(protocol.TOO_LARGE, f"the server sent a frame over the limit of {frame_bytes:,} bytes "
                        "(sandbox.line_limit)")
    return WireFault(_say(exc))


def _message(frame: Any) -> dict[str, Any]:
    """A frame as an OpenEnv message (``type`` and ``data``), or the server's protocol failure."""
    try:
        message = protocol.decode_reply(frame.encode() if isinstance(frame, str) else frame)
    except (ValueError, RecursionError) as exc:
        raise Rejected(protocol.PROTOCOL, f"the server sent a frame that is not JSON ({str(exc)[:80]})") from None
    if type(message) is not dict or type(message.get("data")) is not dict:
        raise Rejected(protocol.PROTOCOL, "the server's reply is not an OpenEnv frame ({'type', 'data'})")
    return message


def _observation_data(message: dict[str, Any]) -> dict[str, Any]:
    """The ``data`` of an observation frame; an error frame is the wire's, anything else the server's fault."""
    if message.get("type") == "error":
        said = message["data"].get("message")
        raise WireFault(f"the server answered with an error: {str(said)[:200]}")
    if message.get("type") != "observation":
        raise Rejected(protocol.PROTOCOL, f"the server replied with a frame of type {str(message.get('type'))[:40]!r}, "
                       "not 'observation'")
    return message["data"]


def _reply(data: dict[str, Any], moved: bool) -> dict[str, Any]:
    """An OpenEnv observation reply in the shape a worker's reply has (checked next by ``schema``)."""
    observation = data.get("observation", {})
    value: dict[str, Any] = {"observation": observation_text(observation), "info": {}}
    listed = observation.get("valid_actions") if isinstance(observation, dict) else None
    if isinstance(listed, list):
        value["valid_actions"] = [a if type(a) is str else json.dumps(a, default=str) for a in listed]
    if moved:
        reward = data.get("reward")
        value["reward"] = 0.0 if reward is None else reward  # OpenEnv allows no reward; anything else must be a number
        value["terminated"], value["truncated"] = data.get("done", False), False
    return value


def require_openenv(url: str) -> None:
    """A one-sentence error, naming the extra to install, where OpenEnv's WebSocket library is missing."""
    _connector(url)
