"""The HTTP transport under the OpenAI client: one kept-alive connection per request slot.

httpx's connection pool scans every pooled connection on each request and on
each response close, probing the socket of every idle one; with 64 connections
that scan cost more client CPU than building, sending and parsing the request
together. Here each slot is a pool of exactly one connection (the standard
httpx transport, so timeouts, errors and keep-alive expiry behave as before),
and free slots are handed out last-in first-out, so a request costs the same
at any concurrency. The ``LLMClient`` semaphore bounds how many slots exist.

A reply is data from someone else: its body is read only up to ``max_body_bytes``
(a declared larger length is refused before any of it is read), so a server
cannot make the client buffer hundreds of megabytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2


class ReplyTooLarge(Exception):
    """A reply body longer than the transport reads (not an httpx error, so the SDK neither retries nor wraps it)."""

    def __init__(self, limit: int):
        super().__init__(f"the reply is larger than the {limit:,} bytes allowed")
        self.limit = limit


class _ReleasingStream(httpx2.AsyncByteStream):
    """A response body that gives its slot back once closed (openai closes every body it reads), read only up to
    ``limit`` bytes."""

    def __init__(self, stream: httpx2.AsyncByteStream, release: Callable[[], None], limit: int | None = None):
        self._stream = stream
        self._release: Callable[[], None] | None = release
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        left = self._limit
        async for part in self._stream:
            if left is not None:
                left -= len(part)
                if left < 0:
                    raise ReplyTooLarge(self._limit or 0)
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

    def __init__(self, keepalive_expiry: float | None = 5.0, trust_env: bool = True,
                 max_body_bytes: int | None = None):
        self._max_body_bytes = max_body_bytes
        self._limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1,
                                     keepalive_expiry=keepalive_expiry)
        self._trust_env = trust_env
        self._ssl = None  # one SSL context shared by all slots, because making one costs more than a request
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
        stream = _ReleasingStream(response.stream, lambda: self._free.append(transport), self._max_body_bytes)
        response.stream = stream
        if self._max_body_bytes is not None and _declared(response) > self._max_body_bytes:
            await stream.aclose()  # unread: the connection is closed, the slot is free again
            raise ReplyTooLarge(self._max_body_bytes)
        return response

    async def aclose(self) -> None:
        transports, self._all, self._free = self._all, [], []
        for transport in transports:
            await transport.aclose()


def _declared(response: httpx2.Response) -> int:
    """The body length the server declared (0 when it declared none or nonsense)."""
    length = response.headers.get("content-length", "")
    return int(length) if length.isascii() and length.isdigit() and len(length) < 20 else 0
