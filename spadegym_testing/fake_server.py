"""A small OpenAI-compatible chat server for tests, benchmarks and offline dry runs.

It speaks the real HTTP protocol on 127.0.0.1, so clients are exercised end to
end. Replies come from a script: a list consumed in order, or a function of the
request. Each scripted reply is a ``FakeReply`` (or a plain string) and can be
slow, fail with a status code, send a malformed body, or drop the connection.

    with FakeOpenAIServer(["\\\\boxed{north}", FakeReply(status=500), "\\\\boxed{east}"]) as server:
        client = LLMClient(EndpointConfig(model="m", base_url=server.url))
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeReply:
    content: str = ""
    reasoning_content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    raw_body: bytes | None = None  # sent as is (malformed replies)
    drop: bool = False  # close the connection without answering
    finish_reason: str = "stop"
    trickle_s: float = 0.0  # send the body one byte at a time, this long apart
    chunked: bool = False  # send the body in chunks without a Content-Length
    #: Native tool calls, each ``{"name": ..., "arguments": {...}}`` (sent as OpenAI's ``message.tool_calls``,
    #: arguments as a JSON string, finish reason ``tool_calls``).
    tool_calls: list[dict[str, Any]] | None = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Read by listen() inside __init__: a backlog of 5 drops the SYNs of a burst of new
    # connections, and each dropped SYN costs the client a 1 s retransmission.
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # connections cut by stop() or by clients are expected here, not news


Script = Sequence[str | FakeReply] | Callable[[dict[str, Any], int], str | FakeReply]


class FakeOpenAIServer:
    """Serves ``/v1/chat/completions`` and ``/v1/models`` from a script."""

    def __init__(self, script: Script = (), model: str = "fake-model", default: str | FakeReply | None = None):
        self.script = script
        self.model = model
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()  # open keep-alive connections, closed by stop()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go away: later requests are refused at the TCP level."""
        self._server.shutdown()
        self._server.server_close()
        # Clients keep connections alive: without this, a pooled connection would still be served.
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop()

    def _next(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
        if callable(self.script):
            reply = self.script(body, index)
        elif index < len(self.script):
            reply = self.script[index]
        elif self.default is not None:
            reply = self.default
        else:
            reply = FakeReply(status=500, content="script exhausted")
        return FakeReply(content=reply) if isinstance(reply, str) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Without TCP_NODELAY the separate header and body writes meet the client's
            # delayed ACK: ~40 ms extra per request, which caps throughput far below ideal.
            disable_nagle_algorithm = True
            # A buffered wfile (flushed after each request by the base class) sends the head and
            # the body in one write: one packet, one wake-up of the client per reply.
            wbufsize = 64 * 1024

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def _send(self, status: int, body: bytes, reply: FakeReply | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if reply is not None and reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self._chunks(body)
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if reply is None or not reply.trickle_s:
                    self.wfile.write(body)
                    return
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(reply.trickle_s)

            def _chunks(self, body: bytes, size: int = 1 << 16) -> None:
                for i in range(0, len(body), size):
                    part = body[i:i + size]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": server.model, "object": "model", "owned_by": "spadegym"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                reply = server._next(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if reply.raw_body is not None:
                    self._send(reply.status, reply.raw_body, reply)
                elif reply.status != 200:
                    self._send(reply.status, json.dumps(
                        {"error": {"message": reply.content or "error", "type": "server_error"}}).encode(), reply)
                else:
                    self._send(200, json.dumps(_completion(body, reply, server.model)).encode(), reply)

        return Handler


def _completion(request: dict[str, Any], reply: FakeReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    finish = reply.finish_reason
    if reply.tool_calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
            "name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}
            for i, call in enumerate(reply.tool_calls)]
        finish = "tool_calls"
    prompt_chars = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(reply.content) // 4)
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": request.get("model", model),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
