"""Host side of the sandbox: the zygote, worker handles, environment handles.

Everything that can go wrong in a worker comes back as an ``Outcome`` with a
failure category; the host never raises because of environment code.

    with Sandbox() as sandbox:
        env = sandbox.open(source, "maze.py")
        if env.loaded.ok:
            first = env.reset(seed=3, want=["valid_actions"])
            step = env.step("north")
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import hardening, protocol, schema
from .config import TIERS, SandboxConfig
from .directories import disk_usage, make_root, remove_tree, sweep_abandoned

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
class _Pending:
    worker: Worker
    request_id: int
    op: str
    timeout: float  # how long the worker may take once it starts on this request
    cap: float = math.inf  # a deadline the request never outlives (its handle's), however late it starts
    started: float = math.inf  # when the worker could start on it: sent, or the reply before it came
    deadline: float = math.inf
    method: str | None = None  # the method of a "call"
    why: str = ""  # what set the deadline, when it is not the per-call limit
    budget: EnvHandle | None = None  # the handle whose episode budgets this request counts against
    outcome: protocol.Outcome | None = None

    def begin(self, now: float) -> None:
        """The worker starts on this request now: its time limit runs from here."""
        self.started, self.deadline = now, min(now + self.timeout, self.cap)


class Worker:
    """One worker process: a private request pipe and reply pipe.

    It answers requests in the order they were sent (``inflight``), one at a time, so several may be
    in flight at once: the episodes it hosts (``EnvHandle.share``) each send one a turn.
    """

    def __init__(self, pid: int, to_worker: int, from_worker: int, scratch: str, config: SandboxConfig,
                 exit_status: Callable[[int], str | None] | None = None):
        self.pid, self.to_worker, self.from_worker = pid, to_worker, from_worker
        self.scratch, self.config = scratch, config
        self.limits = config.reply_limits()  # built once: every reply is checked against it
        self._exit_status = exit_status
        self._buf = bytearray()
        self._next_id = 0
        self.alive = True
        self.inflight: deque[_Pending] = deque()  # sent, not answered yet; the first is the one it works on
        self.outbox = bytearray()  # requests its pipe has not taken yet, written by ``gather`` all at once
        self.hosted = 0  # environment instances loaded in it over its life (slots)
        self.guests = 0  # handles using it now
        self.ended_by = ""  # why it was ended, for the requests it can no longer answer

    def send(self, op: str, timeout: float, cap: float = math.inf, why: str = "", budget: EnvHandle | None = None,
             **args: Any) -> _Pending:
        """Queue a request; ``gather`` writes a worker's queued requests in one write, under their deadline
        (the worker then wakes once for all of them).

        ``timeout`` runs from when the worker can start on it (its earlier requests answered); ``cap`` is a
        deadline it never outlives; ``why`` says what set the limit, ``budget`` whose budgets it counts against.
        """
        self._next_id += 1
        pending = _Pending(self, self._next_id, op, timeout, cap, method=args.get("method"), why=why, budget=budget)
        now = time.perf_counter()
        if not self.alive:
            pending.begin(now)
            pending.outcome = _done(pending, self.gone(op))
            return pending
        if timeout <= 0:  # no time left for it (its episode's budget, its caller's deadline)
            pending.begin(now)
            self.end(f"{op} had no time left")
            pending.outcome = _done(pending, _timed_out(pending, now))
            return pending
        try:
            self.outbox += protocol.encode({"id": self._next_id, "op": op, **args})
        except ValueError:  # arguments JSON cannot hold (NaN): the request cannot be sent
            self.end(f"{op}'s arguments cannot be sent as JSON")
            pending.begin(now)
            pending.outcome = _done(pending, self.gone(op))
            return pending
        if not self.inflight:
            pending.begin(now)
        self.inflight.append(pending)
        return pending

    def gone(self, op: str) -> protocol.Outcome:
        """The failure of a request to a worker that had already ended."""
        why = f" ({self.ended_by})" if self.ended_by else ""
        return protocol.failure(protocol.CRASH, f"the worker process had already ended{why}; {op} was not answered")

    def end(self, why: str) -> None:
        """Kill the worker; the requests still queued behind the one that ended it fail, saying why."""
        self.ended_by = self.ended_by or why
        self.kill()
        while self.inflight:
            p = self.inflight.popleft()
            if p.outcome is None:
                p.begin(min(p.started, time.perf_counter()))
                p.outcome = _done(p, self.gone(p.op))

    def _line(self) -> bytes | None:
        nl = self._buf.find(b"\n")
        if nl < 0:
            return None
        line = bytes(self._buf[:nl])
        del self._buf[: nl + 1]
        return line

    def _read_some(self) -> bool:
        """Read what is available; False on end of file."""
        try:
            chunk = os.read(self.from_worker, 1 << 16)
        except OSError:
            return False
        self._buf += chunk
        return bool(chunk)

    def ended_how(self) -> str | None:
        """How the process ended ("killed by SIGSEGV"), when the zygote says so quickly."""
        return self._exit_status(self.pid) if self._exit_status and self.pid else None

    def kill(self) -> None:
        if self.pid and (self.alive or self.to_worker >= 0):
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.alive or self.to_worker >= 0:
            for fd in (self.to_worker, self.from_worker):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.to_worker = self.from_worker = -1
        self.alive = False
        remove_tree(self.scratch)


def _write_some(fd: int, data: memoryview) -> int:
    """Write what a non-blocking pipe takes now; how many bytes that was."""
    written = 0
    with data:
        while written < len(data):
            try:
                written += os.write(fd, data[written:])
            except BlockingIOError:
                break
    return written


def gather(pendings: list[_Pending]) -> list[protocol.Outcome]:
    """Wait for replies to requests in flight on several workers (pipelined).

    Every request ends by its deadline, whatever the worker does: the rest of a
    request the worker's pipe did not take is written here, under the same
    deadline as the reply. A worker's replies come in the order of its requests;
    a reply to a request of another caller's is kept on that request for its ``gather``.
    """
    while True:
        workers = list({id(p.worker): p.worker for p in pendings if p.outcome is None}.values())
        if not workers:
            return [p.outcome for p in pendings]  # type: ignore[misc] - every one is answered above
        now = time.perf_counter()
        earliest = math.inf
        readers: dict[int, Worker] = {}
        writers: dict[int, Worker] = {}
        for worker in workers:
            _settle(worker, now)
            if worker.inflight:
                earliest = min(earliest, worker.inflight[0].deadline)
                readers[worker.from_worker] = worker
                if worker.outbox:
                    writers[worker.to_worker] = worker
        if not readers:
            continue
        poller = select.poll()  # not select(): it fails on descriptors above 1023
        for fd in readers:
            poller.register(fd, select.POLLIN)
        for fd in writers:
            poller.register(fd, select.POLLOUT)
        for fd, _event in poller.poll(max(0.0, earliest - now) * 1000.0):
            if fd in writers and writers[fd].inflight:
                _write_queued(writers[fd])
            elif fd in readers and readers[fd].inflight:
                worker = readers[fd]
                if worker._read_some():
                    _take_replies(worker)
                else:
                    _fail_head(worker, _how_it_ended)


def _settle(worker: Worker, now: float) -> None:
    """Write what the pipe takes; answer what needs no waiting: replies already read, a request past its deadline."""
    if worker.outbox and worker.inflight:
        _write_queued(worker)
    _take_replies(worker)
    if worker.inflight and now >= worker.inflight[0].deadline:
        _fail_head(worker, lambda p: _timed_out(p, now))


def _timed_out(p: _Pending, now: float) -> protocol.Outcome:
    limit = p.why or f"{p.op} did not answer within {p.deadline - p.started:.1f}s"
    return protocol.failure(protocol.TIMEOUT, f"{limit} (endless loop or sleep?)", now - p.started)


def _fail_head(worker: Worker, failure: Callable[[_Pending], protocol.Outcome]) -> None:
    """The request the worker works on failed in a way that ends the worker: so do the ones behind it."""
    p = worker.inflight.popleft()
    p.outcome = _done(p, failure(p))
    worker.end(_cause(p))


def _cause(p: _Pending) -> str:
    """Why a request's failure ended its worker, as the requests queued behind it are told."""
    whose = "another of its episodes" if p.worker.hosted > 1 else "its episode"
    return f"{p.op} of {whose} failed: {p.outcome.message if p.outcome else 'unknown'}"


def _write_queued(worker: Worker) -> None:
    """Write what the worker's pipe takes now of its queued requests."""
    try:
        written = _write_some(worker.to_worker, memoryview(worker.outbox))
    except OSError:  # the worker closed its end: it has ended
        _fail_head(worker, _how_it_ended)
        return
    del worker.outbox[:written]


def _take_replies(worker: Worker) -> None:
    """Answer the worker's requests, in order, with the complete reply lines read so far."""
    while worker.inflight:
        line = worker._line()
        if line is None:
            if len(worker._buf) > worker.config.line_limit:
                _fail_head(worker, lambda p: protocol.failure(protocol.PROTOCOL, "worker reply exceeds the line size limit"))
            return
        p = worker.inflight.popleft()
        now = time.perf_counter()
        p.outcome = _finish(p, line, extra=bool(worker._buf) and not worker.inflight)
        if not worker.alive:
            worker.end(_cause(p))
        elif worker.inflight:
            worker.inflight[0].begin(now)


def _done(p: _Pending, outcome: protocol.Outcome) -> protocol.Outcome:
    """Charge the request's time and text to its episode's budgets; the outcome, or a too_large failure."""
    return p.budget.account(p, outcome) if p.budget is not None else outcome


def _text_size(value: Any) -> int:
    """Characters of text a checked reply value brings (observation, menu, hint, solution)."""
    kind = type(value)  # checked values hold plain str, list and dict (schema copies them)
    if kind is str:
        return len(value)
    if kind is list:
        return sum([len(v) for v in value if type(v) is str])
    if kind is dict:
        return _text_size(value.get("observation")) + _text_size(value.get("valid_actions")) \
            + _text_size(value.get("hint"))
    return 0


# Signals that mean a resource limit rather than a crash.
_LIMIT_SIGNALS = {"SIGXCPU": (protocol.TIMEOUT, "used up its CPU-time limit"),
                  "SIGXFSZ": (protocol.FORBIDDEN, "exceeded the file size limit")}


def _how_it_ended(p: _Pending) -> protocol.Outcome:
    how = p.worker.ended_how()
    p.worker.kill()
    seconds = time.perf_counter() - p.started
    for sig, (category, what) in _LIMIT_SIGNALS.items():
        if how and how.endswith(sig):
            return protocol.failure(category, f"the worker {what} during {p.op} ({how})", seconds)
    if p.op == "load" and how == f"exited with code {hardening.CONFINE_FAILED_EXIT}":
        return protocol.failure(protocol.CRASH, "the worker could not confine itself (a sandbox layer that "
                         "sandbox.min_tier requires failed); run `spadegym doctor`", seconds)
    detail = how or "os._exit, a fatal signal or a C-level crash"
    return protocol.failure(protocol.CRASH, f"the worker process ended during {p.op} ({detail})", seconds)


def _finish(p: _Pending, line: bytes, extra: bool) -> protocol.Outcome:
    """Check a reply line; ``extra``: more bytes came after it than the worker's requests ask for."""
    config = p.worker.config
    outcome = protocol.parse_reply(line, p.request_id, config.output_limit)
    outcome.seconds = time.perf_counter() - p.started
    if outcome.ok:
        try:
            outcome.value = schema.check_value(p.op, p.method, outcome.value, p.worker.limits)
        except schema.Rejected as exc:
            outcome = protocol.failure(exc.category, f"{p.op}: {exc}", outcome.seconds, outcome.output)
    if outcome.status in (protocol.PROTOCOL, protocol.TOO_LARGE) or extra:
        # Extra or forged lines mean the environment wrote to the protocol pipe.
        p.worker.kill()
        if outcome.ok:
            outcome = protocol.failure(protocol.PROTOCOL, "worker sent more than one reply (forged protocol lines)")
    return _done(p, outcome)


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
        self._lock = threading.Lock()
        self._slots = 0
        # A root host gives each worker an unprivileged uid from a block no other sandbox uses.
        self._uid_base, self._uid_lock = hardening.claim_uid_block() if os.geteuid() == 0 else (None, None)
        self._workers: set[Worker] = set()
        self._sharing: dict[tuple, list[Worker]] = {}  # workers with free slots, by file (EnvHandle.share)
        self._exits: dict[int, str] = {}  # worker pid -> how it ended, as the zygote reported

    # -- zygote ---------------------------------------------------------------
    def _start_zygote(self) -> None:
        host_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        args = [sys.executable, "-B", "-c", _BOOT, str(zygote_end.fileno())]
        if self.report.layers.get("netns"):
            args.append("--netns")
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
            while True:
                msg = self._zygote_message(None)
                if msg is None:
                    raise SandboxError("the sandbox zygote exited; run `spadegym doctor` to check the machine")
                if msg.get("ready"):
                    self._ready = True
                    return

    def spawn(self) -> Worker:
        """Fork a new confined worker from the zygote."""
        with self._lock:
            if self._zygote is None or self._zygote.poll() is not None:
                self._start_zygote()
            self._slots += 1
            scratch = tempfile.mkdtemp(prefix="w", dir=self._root)
            to_w_r, to_w_w = os.pipe()
            from_w_r, from_w_w = os.pipe()
            uid = None if self._uid_base is None else self._uid_base + self._slots % hardening.UID_BLOCK
            spec = {"config": self.config.model_dump(), "scratch": scratch, "uid": uid}
            assert self._sock is not None
            try:
                socket.send_fds(self._sock, [json.dumps(spec).encode()], [to_w_r, from_w_w])
                pid = None
                while pid is None:
                    msg = self._zygote_message(None)
                    if msg is None:
                        raise SandboxError("the sandbox zygote exited; run `spadegym doctor` to check the machine")
                    pid = msg.get("pid")
                self._ready = True
            finally:
                os.close(to_w_r)
                os.close(from_w_w)
            for fd in (to_w_w, from_w_r):
                os.set_inheritable(fd, False)
            os.set_blocking(to_w_w, False)  # requests are written under their deadline (gather)
            w = Worker(pid, to_w_w, from_w_r, scratch, self.config, exit_status=self._exit_status)
            self._workers.add(w)
            return w

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
        ``share`` > 1: its worker may host up to that many instances of the same file (see ``EnvHandle``).
        """
        return EnvHandle(self, source, filename, max_turns, deadline=deadline, share=share)

    def _place(self, handle: EnvHandle) -> tuple[Worker, int]:
        """A worker and a slot for ``handle``'s instance: a free slot of a worker hosting its file, else a new worker.

        A worker hosts at most ``share`` instances over its life (each for ``recycle_after`` episodes),
        so its process-wide limits bound as many episodes as they always did per instance.
        """
        key = (handle.source, handle.filename, handle.max_turns, handle.share)
        if handle.share > 1:
            with self._lock:
                workers = [w for w in self._sharing.pop(key, []) if w.alive and w.hosted < handle.share]
                if workers:
                    self._sharing[key] = workers
                    worker = workers[0]
                    worker.hosted += 1
                    worker.guests += 1
                    return worker, worker.hosted - 1
        worker = self.spawn()
        worker.hosted = worker.guests = 1
        if handle.share > 1:
            with self._lock:
                self._sharing.setdefault(key, []).append(worker)
        return worker, 0

    def gather(self, pendings: list[_Pending]) -> list[protocol.Outcome]:
        """``gather`` for this sandbox's handles (the method every environment host has)."""
        return gather(pendings)

    def close(self) -> None:
        for w in list(self._workers):
            w.kill()
        self._workers.clear()
        self._sharing.clear()
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


@dataclass
class EnvHandle:
    """One environment instance in the sandbox, replaced transparently when needed.

    A worker is recycled after ``recycle_after`` episodes and after any failure;
    the replacement reloads the same source before the next reset.

    ``share`` > 1: the instance may live in a worker with up to ``share`` instances of the same file
    (``Sandbox.open``), each loaded in its own slot (own module namespace, own module-level ``random``),
    so the episodes they play are the ones they would be in workers of their own; one worker wakes
    once a turn for all of them. What ends the worker (a timeout, a crash, its memory limit) ends
    the episodes it hosts.

    Budgets: each request has ``step_timeout_s``; an episode (from one reset to
    the next) has ``episode_budget_s`` of sandbox time in all; and an owner may
    set ``deadline`` (a ``time.perf_counter()`` value) that no request outlives,
    as the gate does for a whole verdict.
    """

    sandbox: Sandbox
    source: str
    filename: str = "<env>"
    max_turns: int | None = None
    loaded: protocol.Outcome = field(init=False)
    worker: Worker | None = field(init=False, default=None)
    episodes: int = field(init=False, default=0)
    deadline: float | None = None
    share: int = 1
    slot: int = field(init=False, default=0)  # its instance's place in a shared worker
    spent: float = field(init=False, default=0.0)  # sandbox seconds used by the current episode
    chars: int = field(init=False, default=0)  # characters of text its replies brought

    def __post_init__(self) -> None:
        self.loaded = self._load()

    def _load(self) -> protocol.Outcome:
        self.worker, self.slot = self.sandbox._place(self)
        self.episodes = 0
        timeout, why = self._limit(self.sandbox.config.load_timeout_s, episode=False)
        p = self.worker.send("load", timeout, self._cap(), why.replace("{op}", "load"), source=self.source,
                             filename=self.filename, max_turns=self.max_turns, **self._where())
        outcome = gather([p])[0]
        if not outcome.ok:
            self.worker.end(f"loading the file in it failed: {outcome.message}")
        elif outcome.value["max_turns"] is not None:  # the host caps turns, whatever the file declares
            outcome.value["max_turns"] = min(outcome.value["max_turns"], self.sandbox.config.max_episode_turns)
        return outcome

    @property
    def info(self) -> dict[str, Any]:
        """What loading reported: class_name, max_turns (at most ``max_episode_turns``), methods."""
        return self.loaded.value if self.loaded.ok else {}

    def _limit(self, timeout: float, episode: bool = True) -> tuple[float, str]:
        """The time the next request may take, and what limits it when that is not ``timeout``."""
        config = self.sandbox.config
        limit, why = timeout, ""
        if episode and config.episode_budget_s - self.spent < limit:
            limit = config.episode_budget_s - self.spent
            why = (f"the episode used up its sandbox time budget (sandbox.episode_budget_s = "
                   f"{config.episode_budget_s:g}s) during {{op}}")
        if self.deadline is not None and self.deadline - time.perf_counter() < limit:
            limit = self.deadline - time.perf_counter()
            why = "{op} ran past the time budget its caller set (e.g. validation.verdict_budget_s)"
        return limit, why

    def _cap(self) -> float:
        return math.inf if self.deadline is None else self.deadline

    def _where(self) -> dict[str, int]:
        """The slot a request goes to, in a worker that hosts several instances."""
        return {"slot": self.slot} if self.share > 1 else {}

    def _leave(self) -> None:
        """Stop using the worker; it ends when no other handle uses it (at once when it is this handle's alone)."""
        worker, self.worker = self.worker, None
        if worker is None:
            return
        worker.guests -= 1
        if worker.guests <= 0 or self.share <= 1 or not worker.alive:
            worker.kill()
            self.sandbox._workers.discard(worker)

    def account(self, pending: _Pending, outcome: protocol.Outcome) -> protocol.Outcome:
        """Count a finished request against the episode's time and text budgets."""
        self.spent += time.perf_counter() - pending.started
        if outcome.ok:
            self.chars += _text_size(outcome.value) + len(outcome.output)
            limit = self.sandbox.config.episode_chars
            if self.chars > limit:
                pending.worker.kill()
                return protocol.failure(protocol.TOO_LARGE, f"the episode's replies brought more than {limit:,} characters of "
                                 f"text (sandbox.episode_chars) by {pending.op}", outcome.seconds, outcome.output)
        return outcome

    def submit(self, op: str, **args: Any) -> _Pending:
        """Send a request without waiting (pair with ``gather`` to pipeline many handles)."""
        if op == "reset":
            needs_new = self.worker is None or not self.worker.alive \
                or self.episodes >= self.sandbox.config.recycle_after or self._scratch_overfull()
            if needs_new:
                self._leave()
                self.loaded = self._load()
            self.episodes += 1
            self.spent, self.chars = 0.0, 0
        assert self.worker is not None
        timeout, why = self._limit(self.sandbox.config.step_timeout_s)
        return self.worker.send(op, timeout, self._cap(), why.replace("{op}", op), self, **args, **self._where())

    def _scratch_overfull(self) -> bool:
        """Whether the worker keeps more than ``scratch_mb`` in its scratch dir (a tmpfs bounds it already)."""
        if self.sandbox.report.layers.get("tmpfs") or self.worker is None:
            return False
        return disk_usage(self.worker.scratch) > self.sandbox.config.scratch_mb * (1 << 20)

    def request(self, op: str, **args: Any) -> protocol.Outcome:
        return gather([self.submit(op, **args)])[0]

    def reset(self, seed: int | None = None, want: list[str] | None = None) -> protocol.Outcome:
        return self.request("reset", seed=seed, want=want or [])

    def step(self, action: str, want: list[str] | None = None) -> protocol.Outcome:
        return self.request("step", action=action, want=want or [])

    def tool(self, name: str, arguments: dict[str, Any] | None = None,
             want: list[str] | None = None) -> protocol.Outcome:
        """A tool call (``execute_tool``); the value has the shape of ``step``'s."""
        return self.request("tool", name=name, arguments=arguments or {}, want=want or [])

    def tools(self, calls: list[dict[str, Any]], want: list[str] | None = None) -> protocol.Outcome:
        """Several tool calls in one turn (``{"name", "arguments"}`` each); the value has the shape of ``step``'s."""
        return self.request("tools", calls=calls, want=want or [])

    def call(self, method: str, *args: Any) -> protocol.Outcome:
        return self.request("call", method=method, args=list(args))

    def close(self) -> None:
        self._leave()


@contextmanager
def sandbox_or_own(sandbox: Sandbox | None, config: SandboxConfig | None = None) -> Iterator[Sandbox]:
    """The caller's sandbox, left open; or, without one, a new one of ``config`` closed on leaving."""
    if sandbox is not None:
        yield sandbox
        return
    with Sandbox(config) as own:
        yield own
