"""Chat completions against any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, hosted).

One client serves both LLM roles (agent and designer): the official ``openai``
client for the wire, plus what a long self-play run needs around it: a
concurrency limit, retries with exponential backoff on 429/5xx/timeouts/
connection errors, a per-call deadline, token accounting, and one clear error
naming the URL when the server cannot be reached.

Everything a server returns is data: a reply is bounded in time (``timeout_s``
for the whole call, body included, however slowly it trickles), in bytes
(``max_reply_bytes``, never buffered past that) and in nesting (the decoder's own
bound, and only four typed fields are read), and its text is made safe
(``text.safe_text``) before any caller uses or stores it. A reply that breaks a
bound is an ``LLMReplyError``: one sentence naming the server, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ..text import safe_text
from .transport import ReplyTooLarge, SlotTransport

if sys.version_info >= (3, 11):
    _deadline = asyncio.timeout
else:  # pragma: no cover - Python 3.10
    from anyio import fail_after as _deadline

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class LLMError(RuntimeError):
    """The server answered with an error that retrying will not fix (bad request, auth, model)."""


class LLMUnavailable(LLMError):
    """The server could not be reached or kept failing after all retries."""


class LLMReplyError(LLMError):
    """The server's reply breaks a bound (larger or deeper than allowed): that call fails, the server is up."""


class EndpointConfig(BaseModel):
    """Where and how to call a model."""

    model_config = {"extra": "forbid"}

    model: str = Field(..., description="Model name as the server knows it.")
    base_url: str = Field(default_factory=lambda: os.environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL),
                          description="Server URL ending in /v1 (default: $OPENAI_BASE_URL or a local server).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key (local servers accept any).")
    temperature: float = Field(0.7, ge=0, le=2, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(1024, ge=1, description="Largest completion per call.")
    concurrency: int = Field(16, ge=1, description="Requests in flight at once.")
    timeout_s: float = Field(120.0, gt=0, description="Deadline for one call, reading the whole reply included; retries excluded.")
    max_reply_bytes: int = Field(4 << 20, ge=1024, description="Largest reply body read from the server; a larger reply fails the call unread.")
    retries: int = Field(4, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each retry (with jitter).")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra JSON fields for the server (e.g. top_k, chat_template_kwargs).")


def parse_spec(argument: str) -> tuple[str, str | None]:
    """An ``openai:`` spec's argument (``MODEL[@BASE_URL]``, as ``AGENTS.parse`` or ``DESIGNERS.parse`` leaves
    it) -> (MODEL, BASE_URL or None)."""
    model, _, url = argument.partition("@")
    if not model:
        raise ValueError(f"'openai:{argument}' names no model; write openai:MODEL or openai:MODEL@http://HOST:PORT/v1.")
    return model, (url or None)


@dataclass
class ChatResult:
    text: str
    reasoning: str = ""  # reasoning_content when the server splits it out
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    attempts: int = 1
    trace_ref: str | None = None  # a local model's opaque reference to the completion's token sequence
    #: Native tool calls (``message.tool_calls``): each ``{"id", "name", "arguments"}``, arguments as the
    #: server sent them (a JSON string, or an object some servers send), bounded by ``_tool_calls``.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def _openai() -> Any:
    """The ``openai`` SDK, imported when a client is first built: it took a third of every command's start-up."""
    import openai

    return openai


class ChatClient(Protocol):
    """What a role needs of a chat model: ``LLMClient`` over HTTP, or a local policy's client."""

    usage: Mapping[str, int]  # prompt and completion tokens so far

    async def chat(self, messages: list[dict[str, str]], **overrides: Any) -> ChatResult: ...

    async def aclose(self) -> None: ...


class LLMClient:
    """An async chat client with a concurrency limit and retries."""

    def __init__(self, endpoint: EndpointConfig):
        self.endpoint = endpoint
        openai = _openai()
        # One kept-alive connection per request in flight (the semaphore bounds them), each its
        # own slot: see transport.py for why not the SDK's shared pool.
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=os.environ.get(endpoint.api_key_env) or "EMPTY",
            timeout=endpoint.timeout_s,
            max_retries=0,  # retries are ours: backoff, accounting and a clear final error
            http_client=openai.DefaultAsyncHttpxClient(
                transport=SlotTransport(max_body_bytes=endpoint.max_reply_bytes), timeout=endpoint.timeout_s),
        )
        self._limit = asyncio.Semaphore(endpoint.concurrency)
        self._rng = random.Random(0)
        self.calls = 0
        self.failures = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    async def chat(self, messages: list[dict[str, str]], **overrides: Any) -> ChatResult:
        """One completion; ``overrides`` replace request fields (temperature, max_tokens, ...)."""
        ep, openai = self.endpoint, _openai()
        retryable = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                     openai.InternalServerError)
        body: dict[str, Any] = {"model": ep.model, "messages": messages, "temperature": ep.temperature,
                                "top_p": ep.top_p, "max_tokens": ep.max_tokens}
        body.update(ep.extra_body)
        body.update(overrides)
        start = time.perf_counter()
        last_error: Exception | None = None
        for attempt in range(ep.retries + 1):
            if attempt:
                delay = ep.backoff_s * (2 ** (attempt - 1)) * (0.5 + self._rng.random())
                await asyncio.sleep(delay)
            try:
                async with self._limit:
                    self.calls += 1
                    # The plain POST skips the SDK's typed walk over every message of the
                    # conversation, which cost more CPU than the rest of a request together;
                    # the body comes back as bytes because building the typed ChatCompletion
                    # cost more than the four fields read from it. The deadline covers the
                    # body too: the SDK's timeouts are per read, which a trickle never trips.
                    async with _deadline(ep.timeout_s):
                        raw = await self._client.post("/chat/completions", body=body, cast_to=bytes)
                return self._result(self._decode(raw), start, attempt + 1)
            except retryable as exc:
                last_error = exc
            except TimeoutError:
                last_error = TimeoutError(f"no whole reply within timeout_s={ep.timeout_s:g}s")
            except ReplyTooLarge as exc:
                self.failures += 1
                raise LLMReplyError(f"the model server at {ep.base_url} sent a reply larger than max_reply_bytes "
                                    f"({exc.limit:,} bytes); it was not read.") from None
            except openai.APIStatusError as exc:
                self.failures += 1
                raise LLMError(_refusal(exc, ep.base_url)) from None
            except (openai.APIResponseValidationError, ValueError, TypeError, LookupError, AttributeError) as exc:
                last_error = exc  # a malformed body: treat like a server hiccup
        self.failures += 1
        raise LLMUnavailable(
            f"cannot get a reply from the model server at {ep.base_url} after {ep.retries + 1} tries "
            f"({type(last_error).__name__}: {_short(last_error)}); check that the server is running "
            "and the URL is right."
        )

    def _decode(self, raw: bytes) -> Any:
        """The JSON of a reply body; too deep for the decoder is an ``LLMReplyError`` (other breakage a ValueError)."""
        try:
            return json.loads(raw)
        except RecursionError:
            self.failures += 1
            raise LLMReplyError(f"the model server at {self.endpoint.base_url} sent a reply nested too deep "
                                "to read; it is not a chat completion.") from None

    def _result(self, data: Any, start: float, attempts: int) -> ChatResult:
        """The reply from a chat-completion JSON body (KeyError/TypeError when it is not one).

        Only typed scalars are kept: text made safe (no lone surrogates, no control sequences), a finish reason
        that is text, token counts that are whole numbers; nothing of the body's structure is walked further."""
        choice = data["choices"][0]
        message = choice["message"]
        text = _text(message.get("content"))
        reasoning = _text(message.get("reasoning_content") or message.get("reasoning"))
        finish = choice.get("finish_reason")
        usage = {}
        counts = data.get("usage")
        if counts is not None:
            usage = {"prompt_tokens": _count(counts.get("prompt_tokens")),
                     "completion_tokens": _count(counts.get("completion_tokens"))}
        # Counted only once the whole reply is read: a malformed body is retried, not counted.
        result = ChatResult(text=text, reasoning=reasoning,
                            finish_reason=safe_text(finish) if isinstance(finish, str) else None,
                            usage=usage, seconds=time.perf_counter() - start, attempts=attempts,
                            tool_calls=_tool_calls(message.get("tool_calls")))
        for key, value in usage.items():
            self.usage[key] += value
        return result

    async def aclose(self) -> None:
        await self._client.close()


def _text(value: Any) -> str:
    """A reply's text field made safe to use and store ("" when absent; TypeError when it is not text)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"a reply's text is a {type(value).__name__}, not a string")
    return safe_text(value)


#: Most native tool calls read from one reply, and the longest name and arguments text of each.
MAX_TOOL_CALLS = 16
_MAX_TOOL_NAME = 200
_MAX_TOOL_ARGUMENTS = 64 * 1024


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    """A reply's native tool calls as ``{"id", "name", "arguments"}`` (arguments: text, or re-encoded JSON
    text when the server sent an object); calls without a usable name, or past the bounds, are dropped."""
    if not isinstance(value, list):
        return []
    calls = []
    for item in value[:MAX_TOOL_CALLS]:
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name.strip() or len(name) > _MAX_TOOL_NAME:
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments if arguments is not None else {}, allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                continue
        if len(arguments) > _MAX_TOOL_ARGUMENTS:
            continue
        call_id = item.get("id")
        calls.append({"id": safe_text(call_id)[:_MAX_TOOL_NAME] if isinstance(call_id, str) else f"call_{len(calls)}",
                      "name": safe_text(name.strip()), "arguments": safe_text(arguments)})
    return calls


def _count(value: Any) -> int:
    """A token count as a whole number (0 when the server sent none, or something that is not a count)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _refusal(exc: Any, base_url: str) -> str:
    """What a refused request means: a 404 that names no model comes from a server with no chat-completions route
    (another server on the port, such as `spadegym serve`), so blaming the model name would mislead."""
    said = _short(exc)
    if exc.status_code == 404 and "model" not in f"{said} {getattr(exc, 'body', '')}".lower():
        return (f"the server at {base_url} answers 404 to /chat/completions: it is not an OpenAI-compatible model "
                "server; check the URL and port (another server, such as `spadegym serve`, may be listening there).")
    return f"the model server at {base_url} refused the request ({exc.status_code}: {said}); check the model name and settings."


def _short(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else "unknown error"
    return " ".join(text.split())[:200]
