"""The curriculum's local service: one process holds the curriculum, every trainer process draws from it.

A trainer under ``accelerate launch`` runs one process per device; the
curriculum (designer, gate, buffer, store) must be one, so the main process
holds it (``loop.driven``) and serves it on 127.0.0.1 over plain HTTP and
JSON; the other processes are clients (``curriculum_client``).

Rules, and why:

- Loopback only: the service binds 127.0.0.1 and refuses any other address
  (the processes of one launch share a machine; a cluster's nodes would need
  the store, not this).
- A secret token, made here and handed to the clients by the launcher's own
  channel (accelerate's broadcast, or the run directory's ``curriculum.json``,
  readable by its owner only): another local user cannot draw or report.
- Requests are bounded (body size) and checked (a report names a play a draw
  returned); a bad request is a 400 with one sentence, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..loop.driven import DrivenCurriculum
from ..rollout import Episode

LOOPBACK = "127.0.0.1"
#: The largest request body: a report's transcript (an episode of 25 turns is far below it).
MAX_BODY = 8 * 1024 * 1024
#: The file in the run directory that names a running service (url and token) for clients started apart.
ADDRESS_FILE = "curriculum.json"

log = logging.getLogger(__name__)


class CurriculumService:
    """``curriculum`` served on 127.0.0.1 (``port`` 0: any free port) until ``close``."""

    def __init__(self, curriculum: DrivenCurriculum, port: int = 0, host: str = LOOPBACK):
        if host != LOOPBACK:
            raise UserError(
                f"the curriculum service listens on {LOOPBACK} only, not {host!r}; the processes of one "
                "launch share this machine."
            )
        self.curriculum = curriculum
        self.token = secrets.token_urlsafe(24)
        self._server = ThreadingHTTPServer((host, port), _handler(curriculum, self.token))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="spadegym-curriculum", daemon=True
        )
        self._thread.start()
        self._address: Path | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def write_address(self, run_dir: str | Path) -> Path:
        """Name this service in ``run_dir`` (owner-only file) for clients that have no other channel."""
        path = Path(run_dir) / ADDRESS_FILE
        path.unlink(missing_ok=True)  # never write through what was there (a link included)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"url": self.url, "token": self.token, "pid": os.getpid()}, f)
        self._address = path
        return path

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._address is not None:
            self._address.unlink(missing_ok=True)

    def __enter__(self) -> CurriculumService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(curriculum: DrivenCurriculum, token: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            log.debug(format, *args)

        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            if self._allowed() and self.path == "/status":
                self._send(200, curriculum.status())
            elif self._allowed():
                self._send(
                    404, {"error": f"no route {self.path}; the routes are /draw, /report and /status."}
                )

        def do_POST(self) -> None:  # noqa: N802 - the base class's name
            if not self._allowed():
                return
            body = self._body()
            if body is None:
                return
            try:
                if self.path == "/draw":
                    self._send(200, curriculum.draw(str(body["ticket"])).to_dict())
                elif self.path == "/report":
                    episode = Episode.from_dict(body["episode"])
                    self._send(200, {"status": curriculum.report(str(body["play_id"]), episode)})
                else:
                    self._send(
                        404, {"error": f"no route {self.path}; the routes are /draw, /report and /status."}
                    )
            except UserError as exc:
                self._send(400, {"error": str(exc)})
            except (KeyError, TypeError, ValueError) as exc:
                self._send(400, {"error": f"malformed {self.path} request ({type(exc).__name__}: {exc})."})
            except Exception as exc:  # noqa: BLE001 - the trainer gets one sentence; the log keeps the trace
                log.exception("curriculum %s failed", self.path)
                self._send(
                    500, {"error": f"the curriculum failed on {self.path}: {type(exc).__name__}: {exc}"}
                )

        def _allowed(self) -> bool:
            if secrets.compare_digest(self.headers.get("Authorization", ""), f"Bearer {token}"):
                return True
            self._send(
                403,
                {"error": "wrong or missing token; use the token the curriculum's main process handed out."},
            )
            return False

        def _body(self) -> dict[str, Any] | None:
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_BODY:
                self._send(413, {"error": f"the request is {size:,} bytes; the most is {MAX_BODY:,}."})
                return None
            try:
                data = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                data = None
            if not isinstance(data, dict):
                self._send(400, {"error": "the request body is not a JSON object."})
                return None
            return data

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
