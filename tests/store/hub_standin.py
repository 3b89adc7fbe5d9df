"""A local stand-in for the parts of the Hugging Face Hub's HTTP API that a dataset or model push uses.

It answers repo creation, the pre-upload check (every file is uploaded inline) and the commit (newline-
delimited JSON with base64 file contents), keeping each pushed file in ``files`` by repo and path.
Set ``HF_ENDPOINT`` to its ``url``, ``HF_TOKEN`` to anything and ``HF_HOME`` to a scratch folder (the client
caches what the endpoint tells it there). Not the Hub: a test double of its wire format.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HubStandIn:
    def __init__(self) -> None:
        self.repos: dict[str, dict] = {}
        self.files: dict[str, dict[str, bytes]] = {}
        self.unknown: list[str] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _reply(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_POST(self) -> None:
                parts = self.path.split("?")[0].strip("/").split("/")
                body = self._body()
                if parts[:2] == ["api", "validate-yaml"]:  # the card's metadata, checked before the commit
                    return self._reply(200, {"errors": [], "warnings": []})
                if parts[:3] == ["api", "repos", "create"]:
                    request = json.loads(body)
                    repo = f"{request.get('organization') or 'user'}/{request['name']}"
                    stand_in.repos[repo] = request
                    kind = "" if request.get("type", "model") == "model" else f"{request['type']}s/"
                    return self._reply(200, {"url": f"{stand_in.url}/{kind}{repo}", "name": repo})
                if parts[:1] == ["api"] and parts[1:2] in (["datasets"], ["models"]) and len(parts) >= 6 \
                        and parts[4] == "preupload":
                    files = json.loads(body)["files"]
                    return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                        "shouldIgnore": False} for f in files]})
                if parts[:1] == ["api"] and parts[1:2] in (["datasets"], ["models"]) and len(parts) >= 6 \
                        and parts[4] == "commit":
                    repo = f"{parts[2]}/{parts[3]}"
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            value = item["value"]
                            stand_in.files.setdefault(repo, {})[value["path"]] = base64.b64decode(value["content"])
                    return self._reply(200, {"commitUrl": f"{stand_in.url}/datasets/{repo}/commit/{'0' * 40}",
                                             "commitOid": "0" * 40, "pullRequestUrl": None})
                stand_in.unknown.append(f"POST {self.path}")
                self._reply(404, {"error": f"the stand-in does not know {self.path}"})

            def do_GET(self) -> None:
                if self.path.split("?")[0] == "/api/agent-harnesses":  # telemetry the client asks for; none
                    return self._reply(200, {"standardEnvVars": [], "harnesses": {}})
                stand_in.unknown.append(f"GET {self.path}")
                self._reply(404, {"error": f"the stand-in does not know {self.path}"})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
