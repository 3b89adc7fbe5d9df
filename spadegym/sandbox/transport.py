"""Pipe transport: requests to worker processes, pipelined, and their checked replies.

A ``Worker`` is one process with a private request pipe and reply pipe; ``send`` queues a
request, ``gather`` writes what is queued and waits for the replies of many workers at once.
Every request ends by its deadline with an ``Outcome``, whatever the worker does; a reply is
checked against its own request (id, schema, limits) before anyone sees it. What a request's
time and text count against is its ``Budget`` (an episode's budgets, ``budget.EpisodeBudget``).
"""

from __future__ import annotations

import math
import os
import select
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from . import hardening, protocol, schema
from .config import SandboxConfig
from .directories import remove_tree


class Budget(Protocol):
    """What a request's time and text count against; the transport asks nothing else of it."""

    def charge(self, op: str, seconds: float, outcome: protocol.Outcome) -> protocol.Outcome:
        """Count a finished request (``seconds`` from when the worker could start on it); the outcome,
        or the failure that going over a budget makes of it (which ends the worker)."""
        ...


@dataclass
class Request:
    worker: Worker
    request_id: int
    op: str
    timeout: float  # how long the worker may take once it starts on this request
    cap: float = math.inf  # a deadline the request never outlives (its handle's), however late it starts
    started: float = math.inf  # when the worker could start on it: sent, or the reply before it came
    deadline: float = math.inf
    method: str | None = None  # the method of a "call"
    why: str = ""  # what set the deadline, when it is not the per-call limit
    budget: Budget | None = None  # what its time and text count against
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
        self.inflight: deque[Request] = deque()  # sent, not answered yet; the first is the one it works on
        self.outbox = bytearray()  # requests its pipe has not taken yet, written by ``gather`` all at once
        self.shared = False  # it hosts instances of several handles (its file's episodes share it)
        self.ended_by = ""  # why it was ended, for the requests it can no longer answer
        self.ended_as = protocol.CRASH  # the category of what ended it, which those requests fail with

    def send(self, op: str, timeout: float, cap: float = math.inf, why: str = "", budget: Budget | None = None,
             **args: Any) -> Request:
        """Queue a request; ``gather`` writes a worker's queued requests in one write, under their deadline
        (the worker then wakes once for all of them).

        ``timeout`` runs from when the worker can start on it (its earlier requests answered); ``cap`` is a
        deadline it never outlives; ``why`` says what set the limit, ``budget`` whose budgets it counts against.
        """
        self._next_id += 1
        pending = Request(self, self._next_id, op, timeout, cap, method=args.get("method"), why=why, budget=budget)
        now = time.perf_counter()
        if not self.alive:
            pending.begin(now)
            pending.outcome = _done(pending, self.gone(op))
            return pending
        if timeout <= 0:  # no time left for it (its episode's budget, its caller's deadline)
            pending.begin(now)
            self.end(f"{op} had no time left", protocol.TIMEOUT)
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
        """The failure of a request to a worker that had already ended: in the category of what ended it."""
        why = f" ({self.ended_by})" if self.ended_by else ""
        return protocol.failure(self.ended_as, f"the worker process had already ended{why}; {op} was not answered")

    def end(self, why: str, cause: str = protocol.CRASH) -> None:
        """Kill the worker; the requests still queued behind the one that ended it fail with its ``cause``, saying why."""
        if not self.ended_by:
            self.ended_by, self.ended_as = why, cause if cause != protocol.OK else protocol.CRASH
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


def gather(pendings: list[Request]) -> list[protocol.Outcome]:
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


def _timed_out(p: Request, now: float) -> protocol.Outcome:
    limit = p.why or f"{p.op} did not answer within {p.deadline - p.started:.1f}s"
    return protocol.failure(protocol.TIMEOUT, f"{limit} (endless loop or sleep?)", now - p.started)


def _fail_head(worker: Worker, failure: Callable[[Request], protocol.Outcome]) -> None:
    """The request the worker works on failed in a way that ends the worker: so do the ones behind it."""
    p = worker.inflight.popleft()
    p.outcome = _done(p, failure(p))
    worker.end(_cause(p), p.outcome.status)


def _cause(p: Request) -> str:
    """Why a request's failure ended its worker, as the requests queued behind it are told."""
    whose = "another of its episodes" if p.worker.shared else "its episode"
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
            worker.end(_cause(p), p.outcome.status)
        elif worker.inflight:
            worker.inflight[0].begin(now)


def _done(p: Request, outcome: protocol.Outcome) -> protocol.Outcome:
    """Charge the request to its budget; a request that goes over one ends its worker, as an oversized reply does."""
    if p.budget is None:
        return outcome
    charged = p.budget.charge(p.op, time.perf_counter() - p.started, outcome)
    if outcome.ok and not charged.ok:
        p.worker.kill()
    return charged


# Signals that mean a resource limit rather than a crash.
_LIMIT_SIGNALS = {"SIGXCPU": (protocol.TIMEOUT, "used up its CPU-time limit"),
                  "SIGXFSZ": (protocol.FORBIDDEN, "exceeded the file size limit")}


def _how_it_ended(p: Request) -> protocol.Outcome:
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


def _finish(p: Request, line: bytes, extra: bool) -> protocol.Outcome:
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
