"""The HTTP transport under the OpenAI client: one kept-alive connection per request slot.

httpx's connection pool scans every pooled connection on each request and on
each response close, probing the socket of every idle one; with 64 connections
that scan cost more client CPU than building, sending and parsing the request
together. Here each slot is a pool of exactly one connection (the standard
httpx transport, so timeouts, errors and keep-alive expiry behave as before),
and free slots are handed out last-in first-out, so a request costs the same
at any concurrency. The ``LLMClient`` semaphore bounds how many slots exist.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2


class _ReleasingStream(httpx2.AsyncByteStream):
    """A response body that gives its slot back once closed (openai closes every body it reads)."""

    def __init__(self, stream: httpx2.AsyncByteStream, release: Callable[[], None]):
        self._stream = stream
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class SlotTransport(httpx2.AsyncBaseTransport):
    """Requests go to free single-connection transports, made on demand and reused LIFO."""

    def __init__(self, keepalive_expiry: float | None = 5.0, trust_env: bool = True):
        self._limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1,
                                     keepalive_expiry=keepalive_expiry)
        self._trust_env = trust_env
        self._ssl = None  # one SSL context shared by all slots: making one costs ~0.25 s
        self._free: list[httpx2.AsyncHTTPTransport] = []
        self._all: list[httpx2.AsyncHTTPTransport] = []

    @property
    def slots(self) -> int:
        """Single-connection transports made so far (at most the peak number of requests in flight)."""
        return len(self._all)

    def _take(self) -> httpx2.AsyncHTTPTransport:
        if self._free:
            return self._free.pop()
        if self._ssl is None:
            self._ssl = httpx2.create_ssl_context(trust_env=self._trust_env)
        transport = httpx2.AsyncHTTPTransport(verify=self._ssl, trust_env=self._trust_env, limits=self._limits)
        self._all.append(transport)
        return transport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        transport = self._take()
        try:
            response = await transport.handle_async_request(request)
        except BaseException:
            self._free.append(transport)
            raise
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _ReleasingStream(response.stream, lambda: self._free.append(transport))
        return response

    async def aclose(self) -> None:
        transports, self._all, self._free = self._all, [], []
        for transport in transports:
            await transport.aclose()
