"""Host side of the sandbox: the zygote, and where each environment instance lives.

``Sandbox`` starts the zygote, forks confined workers from it (``transport.Worker``) and places
each environment handle (``handle.EnvHandle``) in a worker and a slot. Everything that can go
wrong in a worker comes back as an ``Outcome`` with a failure category; the host never raises
because of environment code.

    with Sandbox() as sandbox:
        env = sandbox.open(source, "maze.py")
        if env.loaded.ok:
            first = env.reset(seed=3, want=["valid_actions"])
            step = env.step("north")
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import hardening, protocol, sharing
from .config import TIERS, SandboxConfig, modules_to_warm
from .directories import make_root, remove_tree, sweep_abandoned
from .handle import EnvHandle
from .transport import Request, Worker, gather

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
#: The zygote's whole environment, which every worker inherits and can read in /proc/self/environ:
#: nothing of the host's (no API keys, no paths), the same at every tier.
WORKER_ENVIRON = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
# The zygote learns where spadegym lives on its stdin, so the path is in neither its
# environment nor its command line (/proc/self/cmdline is readable too).
_BOOT = ("import sys; sys.path.insert(0, sys.stdin.readline().rstrip('\\n')); "
         "from spadegym.sandbox import zygote; zygote.main_from_argv(sys.argv[1:])")
# The zygote leaves the terminal's process group (Ctrl-C is the host's) but stays in
# its session: a session of its own is a scheduling group of its own (autogroup).
_OWN_GROUP: dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


class SandboxError(RuntimeError):
    """The sandbox itself cannot start (not an environment failure)."""


@dataclass
class _Tenancy:
    """How a worker that hosts several instances of one file is used (``EnvHandle.share``)."""

    key: tuple  # the file it hosts: source, filename, max_turns, share
    hosted: int = 1  # instances loaded in it over its life (slots)
    guests: int = 1  # handles using it now


class Sandbox:
    """Owns the zygote and the scratch root; hands out workers and environment handles."""

    def __init__(self, config: SandboxConfig | None = None):
        self.config = config or SandboxConfig()
        self.report = hardening.probe(self.config)
        if self.config.min_tier and self.report.rank() < TIERS.index(self.config.min_tier):
            missing = "; ".join(f"{k}: {v}" for k, v in self.report.missing.items()) or "unknown"
            raise SandboxError(
                f"sandbox tier '{self.report.tier}' is below the required '{self.config.min_tier}' "
                f"({missing}); run `spadegym doctor` or lower sandbox.min_tier."
            )
        sweep_abandoned()  # roots of owners killed together with their zygote
        self._root, self._root_lock = make_root()
        self._zygote: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._ready = False
        self._warm: set[str] = set(self.config.preload)  # modules the zygote has imported (a new one imports them too)
        self._lock = threading.Lock()
        self._slots = 0
        # A root host gives each worker an unprivileged uid from a block no other sandbox uses.
        self._uid_base, self._uid_lock = hardening.claim_uid_block() if os.geteuid() == 0 else (None, None)
        self._workers: set[Worker] = set()
        self._sharing: dict[tuple, list[Worker]] = {}  # workers with free slots, by file (EnvHandle.share)
        self._tenancy: dict[Worker, _Tenancy] = {}  # the workers hosting several handles, and how
        self._exits: dict[int, str] = {}  # worker pid -> how it ended, as the zygote reported

    # -- zygote ---------------------------------------------------------------
    def _start_zygote(self) -> None:
        host_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        args = [sys.executable, "-B", "-c", _BOOT, str(zygote_end.fileno())]
        if self.report.layers.get("netns"):
            args.append("--netns")
        if self._warm:
            args += ["--preload", ",".join(sorted(self._warm))]
        self._zygote = subprocess.Popen(
            args,
            pass_fds=[zygote_end.fileno()], env=WORKER_ENVIRON, cwd=self._root, stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **_OWN_GROUP,
        )
        zygote_end.close()
        assert self._zygote.stdin is not None
        with self._zygote.stdin as stdin:
            stdin.write(_PACKAGE_PARENT.encode() + b"\n")
        self._sock = host_end
        self._sock_buf = b""
        self._ready = False  # it answers once it has imported what workers need

    def start(self) -> None:
        """Start the zygote, if it is not running, and wait until it answers.

        A spawn does this anyway; work that is timed (a verdict's budget) starts it first, so
        the interpreter's start, slow on a loaded machine, is never charged to an environment.
        """
        with self._lock:
            if self._zygote is not None and self._zygote.poll() is None and self._ready:
                return
            if self._zygote is None or self._zygote.poll() is not None:
                self._start_zygote()
            assert self._sock is not None
            self._sock.sendall(json.dumps({"op": "ping"}).encode())
            self._answer("ready")
            self._ready = True

    def warm(self, source: str) -> None:
        """Have the zygote import the slow trusted modules ``source`` imports (``WARM_MODULES``) before it forks the
        file's workers: imported once per sandbox and never inside a worker's time limits."""
        wanted = [m for m in modules_to_warm(source) if m not in self._warm]
        if not wanted:
            return
        self.start()
        with self._lock:
            assert self._sock is not None
            self._sock.sendall(json.dumps({"op": "preload", "modules": wanted}).encode())
            self._answer("ready")
            self._warm.update(wanted)

    def prepare(self, source: str, filename: str, class_name: str, action_format: str) -> None:
        """Have the zygote compile a file the caller is about to open, given the class name and action format it read
        from the source (``static.env_class``, ``reference.action_format``): its workers then neither parse nor compile it."""
        self.start()
        source_fd = _source_file(source)
        if source_fd is None:
            return
        spec = {"op": "prepare", "prepare": filename, "facts": [class_name, action_format]}
        with self._lock:
            assert self._sock is not None
            try:
                socket.send_fds(self._sock, [json.dumps(spec).encode()], [source_fd])
            finally:
                os.close(source_fd)
            self._answer("ready")

    def spawn(self, share: int = 1, prepare: tuple[str, str] | None = None) -> Worker:
        """Fork a new confined worker from the zygote; one that will host ``share`` instances gets the memory and CPU limits of as many workers (each instance's
        budget is one worker's). ``prepare``: the (source, filename) it will load, which the zygote compiles once
        for all the workers of that file (``worker.prepare``)."""
        with self._lock:
            if self._zygote is None or self._zygote.poll() is not None:
                self._start_zygote()
            self._slots += 1
            scratch = tempfile.mkdtemp(prefix="w", dir=self._root)
            to_w_r, to_w_w = os.pipe()
            from_w_r, from_w_w = os.pipe()
            uid = None if self._uid_base is None else self._uid_base + self._slots % hardening.UID_BLOCK
            limits = self.config if share <= 1 else self.config.model_copy(update={
                "memory_mb": self.config.memory_mb * share, "cpu_seconds": self.config.cpu_seconds * share})
            spec: dict[str, Any] = {"config": limits.model_dump(), "scratch": scratch, "uid": uid}
            fds = [to_w_r, from_w_w]
            source_fd = None if prepare is None else _source_file(prepare[0])
            if source_fd is not None:
                spec["prepare"] = prepare[1]  # type: ignore[index]
                fds.append(source_fd)
            assert self._sock is not None
            try:
                socket.send_fds(self._sock, [json.dumps(spec).encode()], fds)
                pid = self._answer("pid")
                self._ready = True
            finally:
                for fd in fds:
                    os.close(fd)
            for fd in (to_w_w, from_w_r):
                os.set_inheritable(fd, False)
            os.set_blocking(to_w_w, False)  # requests are written under their deadline (gather)
            w = Worker(pid, to_w_w, from_w_r, scratch, self.config, exit_status=self._exit_status)
            self._workers.add(w)
            return w

    def _answer(self, key: str) -> Any:
        """The zygote's answer to the request just sent: the first message carrying ``key`` (lock held)."""
        while True:
            msg = self._zygote_message(None)
            if msg is None:
                raise SandboxError("the sandbox zygote exited; run `spadegym doctor` to check the machine")
            if msg.get(key):
                return msg[key]

    def _zygote_message(self, timeout: float | None) -> dict | None:
        """The next message from the zygote; exit notes are filed on the way (lock held)."""
        assert self._sock is not None
        while True:
            if b"\n" in self._sock_buf:
                line, self._sock_buf = self._sock_buf.split(b"\n", 1)
                msg = json.loads(line)
                if "exit" not in msg:
                    return msg
                if len(self._exits) > 4096:  # nobody asked about these: forget the oldest
                    for old in list(self._exits)[:2048]:
                        del self._exits[old]
                self._exits[msg["exit"]] = msg["status"]
                if timeout is not None:
                    return {}  # let a caller waiting for one exit check it
                continue
            if timeout is not None and not select.select([self._sock], [], [], timeout)[0]:
                return {}
            chunk = self._sock.recv(4096)
            if not chunk:
                return None
            self._sock_buf += chunk

    def _exit_status(self, pid: int, wait_s: float = 0.1) -> str | None:
        """How worker ``pid`` ended, waiting briefly for the zygote's note."""
        deadline = time.perf_counter() + wait_s
        with self._lock:
            while pid not in self._exits and self._sock is not None:
                left = deadline - time.perf_counter()
                if left <= 0 or self._zygote_message(left) is None:
                    break
            return self._exits.pop(pid, None)

    @property
    def episodes_per_worker(self) -> int:
        return self.config.episodes_per_worker

    def open(self, source: str, filename: str = "<env>", max_turns: int | None = None,
             deadline: float | None = None, share: int = 1) -> EnvHandle:
        """Load an environment in a fresh worker; check ``handle.loaded`` for the outcome.

        ``deadline`` (a ``time.perf_counter()`` value): no request on this handle outlives it.
        ``share`` > 1: its worker may host up to that many instances of the same file (see ``EnvHandle``),
        when the file is one ``sharing`` vouches for; any other file gets a worker of its own.
        """
        share = share if share > 1 and sharing.may_share(source) else 1
        self.warm(source)
        return EnvHandle(self, source, filename, max_turns, deadline=deadline, share=share)

    def place(self, source: str, filename: str, max_turns: int | None, share: int) -> tuple[Worker, int]:
        """A worker and a slot for an instance of this file: a free slot of a worker hosting it, else a new worker.

        A worker hosts at most ``share`` instances over its life (each for ``recycle_after`` episodes),
        so its process-wide limits bound as many episodes as they always did per instance.
        """
        key = (source, filename, max_turns, share)
        if share > 1:
            with self._lock:
                workers = [w for w in self._sharing.pop(key, []) if w.alive and self._tenancy[w].hosted < share]
                if workers:
                    self._sharing[key] = workers
                    tenancy = self._tenancy[workers[0]]
                    tenancy.hosted += 1
                    tenancy.guests += 1
                    return workers[0], tenancy.hosted - 1
        worker = self.spawn(share, (source, filename))
        if share > 1:
            worker.shared = True
            with self._lock:
                self._tenancy[worker] = _Tenancy(key)
                self._sharing.setdefault(key, []).append(worker)
        return worker, 0

    def release(self, worker: Worker) -> None:
        """A handle stops using ``worker``; it ends when no other handle uses it (at once when it was one handle's)."""
        with self._lock:
            tenancy = self._tenancy.get(worker)
            if tenancy is not None:
                tenancy.guests -= 1
            if tenancy is None or tenancy.guests <= 0 or not worker.alive:
                self._tenancy.pop(worker, None)
                worker.kill()
                self._workers.discard(worker)
                if tenancy is not None:  # an ended worker leaves its file's list, and a file with none leaves too:
                    # kept, each level ever played held a dead worker and its source for the rest of the run
                    left = [w for w in self._sharing.get(tenancy.key, []) if w is not worker]
                    if left:
                        self._sharing[tenancy.key] = left
                    else:
                        self._sharing.pop(tenancy.key, None)

    def gather(self, pendings: list[Request]) -> list[protocol.Outcome]:
        """``gather`` for this sandbox's handles (the method every environment host has)."""
        return gather(pendings)

    def close(self) -> None:
        for w in list(self._workers):
            w.kill()
        self._workers.clear()
        self._sharing.clear()
        self._tenancy.clear()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._zygote is not None:
            try:
                self._zygote.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._zygote.kill()
                self._zygote.wait()
            self._zygote = None
        remove_tree(self._root)
        if self._root_lock is not None:
            os.close(self._root_lock)
            self._root_lock = None
        if self._uid_lock is not None:
            os.close(self._uid_lock)
            self._uid_lock = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _source_file(source: str) -> int | None:
    """A memory file holding ``source`` for the zygote to read (a socket message would have to be framed); None where
    the kernel has none (the worker then compiles the file itself)."""
    try:
        fd = os.memfd_create("source", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    data = memoryview(source.encode("utf-8", "surrogatepass"))
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        os.close(fd)
        return None
    return fd


@contextmanager
def sandbox_or_own(sandbox: Sandbox | None, config: SandboxConfig | None = None) -> Iterator[Sandbox]:
    """The caller's sandbox, left open; or, without one, a new one of ``config`` closed on leaving."""
    if sandbox is not None:
        yield sandbox
        return
    with Sandbox(config) as own:
        yield own
