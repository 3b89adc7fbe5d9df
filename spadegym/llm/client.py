"""Chat completions against any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, hosted).

One client serves both LLM roles (agent and designer): the official ``openai``
client for the wire, plus what a long self-play run needs around it: a
concurrency limit, retries with exponential backoff on 429/5xx/timeouts/
connection errors, a per-call deadline, token accounting, and one clear error
naming the URL when the server cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from .transport import SlotTransport

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class LLMError(RuntimeError):
    """The server answered with an error that retrying will not fix (bad request, auth, model)."""


class LLMUnavailable(LLMError):
    """The server could not be reached or kept failing after all retries."""


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
    timeout_s: float = Field(120.0, gt=0, description="Deadline for one call, retries excluded.")
    retries: int = Field(4, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each retry (with jitter).")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra JSON fields for the server (e.g. top_k, chat_template_kwargs).")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``openai:MODEL[@BASE_URL]`` -> (MODEL, BASE_URL or None)."""
    body = spec.split(":", 1)[1] if spec.startswith("openai:") else spec
    model, _, url = body.partition("@")
    if not model:
        raise ValueError(f"'{spec}' names no model; write openai:MODEL or openai:MODEL@http://HOST:PORT/v1.")
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
            http_client=openai.DefaultAsyncHttpxClient(transport=SlotTransport(), timeout=endpoint.timeout_s),
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
                    # cost more than the four fields read from it.
                    raw = await self._client.post("/chat/completions", body=body, cast_to=bytes)
                return self._result(json.loads(raw), start, attempt + 1)
            except retryable as exc:
                last_error = exc
            except openai.APIStatusError as exc:
                self.failures += 1
                raise LLMError(f"the model server at {ep.base_url} refused the request "
                               f"({exc.status_code}: {_short(exc)}); check the model name and settings.") from None
            except (openai.APIResponseValidationError, ValueError, TypeError, LookupError, AttributeError) as exc:
                last_error = exc  # a malformed body: treat like a server hiccup
        self.failures += 1
        raise LLMUnavailable(
            f"cannot get a reply from the model server at {ep.base_url} after {ep.retries + 1} tries "
            f"({type(last_error).__name__}: {_short(last_error)}); check that the server is running "
            "and the URL is right."
        )

    def _result(self, data: Any, start: float, attempts: int) -> ChatResult:
        """The reply from a chat-completion JSON body (KeyError/TypeError when it is not one)."""
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        usage = {}
        counts = data.get("usage")
        if counts is not None:
            usage = {"prompt_tokens": int(counts.get("prompt_tokens") or 0),
                     "completion_tokens": int(counts.get("completion_tokens") or 0)}
        # Counted only once the whole reply is read: a malformed body is retried, not counted.
        result = ChatResult(text=str(text), reasoning=str(reasoning), finish_reason=choice.get("finish_reason"),
                            usage=usage, seconds=time.perf_counter() - start, attempts=attempts)
        for key, value in usage.items():
            self.usage[key] += value
        return result

    async def aclose(self) -> None:
        await self._client.close()


def _short(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else "unknown error"
    return " ".join(text.split())[:200]
