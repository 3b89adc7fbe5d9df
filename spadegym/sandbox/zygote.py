"""The zygote: a pre-warmed interpreter that forks one worker per request.

Started by the host as ``python -m spadegym.sandbox.zygote FD`` with a clean
environment. It imports everything a worker needs once, then for each spawn
request receives the worker's two pipe ends over its Unix socket, forks, and
answers with the child's pid. When the host goes away it kills its workers.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

# Pre-import what workers use so a fork starts warm.
from ..envfile import loader as _loader  # noqa: F401
from . import hardening, worker
from .config import SandboxConfig


def _run_worker(spec: dict, in_fd: int, out_fd: int) -> None:
    try:
        os.setsid()  # own process group: the host kills the whole group on timeout
        config = SandboxConfig(**spec["config"])
        hardening.confine(config, spec["scratch"], {in_fd, out_fd}, slot=spec.get("slot", 0))
        worker.serve(in_fd, out_fd, config.output_limit, config.line_limit)
    except BaseException:  # noqa: BLE001 - never fall back into the zygote loop
        pass
    os._exit(0)


def main(sock_fd: int) -> None:
    sock = socket.socket(fileno=sock_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle
    children: set[int] = set()
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 2)
        except OSError:
            msg, fds = b"", []
        if not msg:
            break
        spec = json.loads(msg)
        if spec.get("op") == "kill":
            children.discard(spec["pid"])
            continue
        in_fd, out_fd = fds
        pid = os.fork()
        if pid == 0:
            sock.close()
            _run_worker(spec, in_fd, out_fd)
        os.close(in_fd)
        os.close(out_fd)
        children.add(pid)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    main(int(sys.argv[1]))
