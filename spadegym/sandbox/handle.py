"""Environment handles: one environment instance in the sandbox, replaced transparently when needed.

    with Sandbox() as sandbox:
        env = sandbox.open(source, "maze.py")
        if env.loaded.ok:
            first = env.reset(seed=3, want=["valid_actions"])
            step = env.step("north")
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

from . import protocol
from .budget import EpisodeBudget
from .config import SandboxConfig
from .directories import disk_usage
from .hardening import TierReport
from .transport import Request, Worker, gather


class Placement(Protocol):
    """What a handle asks of the sandbox it lives in (``host.Sandbox``)."""

    config: SandboxConfig
    report: TierReport

    def place(self, source: str, filename: str, max_turns: int | None, share: int) -> tuple[Worker, int]:
        """A worker and a slot in it for one instance of this file."""
        ...

    def release(self, worker: Worker) -> None:
        """The handle no longer uses ``worker``."""
        ...


@dataclass
class EnvHandle:
    """One environment instance in the sandbox, replaced transparently when needed.

    A worker is recycled after ``recycle_after`` episodes and after any failure;
    the replacement reloads the same source before the next reset.

    Opening sends the load and returns: ``loaded`` (or the first request) waits for it, so many
    handles opened together load side by side, and a caller that gathers their ``pending_load``
    requests at once waits once for all of them.

    ``share`` > 1: the instance may live in a worker with up to ``share`` instances of the same file
    (``Sandbox.open``), each loaded in its own slot (own module namespace, own module-level ``random``);
    one worker wakes once a turn for all of them, with the memory and CPU limits of ``share`` workers.
    A slot does not separate what the process shares (other modules' attributes, the decimal context),
    so ``Sandbox.open`` grants it only for a file ``sharing`` vouches for (a built-in family's rendering,
    tested to play the same either way). What ends the worker (a timeout, a crash, its memory limit) ends the episodes
    it hosts, each failing with that cause's category.

    Budgets (``budget``): each request has ``step_timeout_s``; an episode (from one reset to
    the next) has ``episode_budget_s`` of sandbox time in all; and an owner may
    set ``deadline`` (a ``time.perf_counter()`` value) that no request outlives,
    as the gate does for a whole verdict.
    """

    sandbox: Placement
    source: str
    filename: str = "<env>"
    max_turns: int | None = None
    _loaded: protocol.Outcome = field(init=False, repr=False)
    worker: Worker | None = field(init=False, default=None)
    episodes: int = field(init=False, default=0)
    deadline: InitVar[float | None] = None
    share: int = 1
    slot: int = field(init=False, default=0)  # its instance's place in a shared worker
    budget: EpisodeBudget = field(init=False)
    #: The load request sent and not yet settled (see above).
    pending_load: Request | None = field(init=False, default=None, repr=False)

    def __post_init__(self, deadline: float | None) -> None:
        self.budget = EpisodeBudget(self.sandbox.config, deadline)
        self._send_load()

    @property
    def loaded(self) -> protocol.Outcome:
        """The outcome of loading the file (waited for here if it has not come yet)."""
        self.settle()
        return self._loaded

    def _send_load(self) -> None:
        self.worker, self.slot = self.sandbox.place(self.source, self.filename, self.max_turns, self.share)
        self.episodes = 0
        timeout, why = self.budget.limit(self.sandbox.config.load_timeout_s, "load", episode=False)
        self.pending_load = self.worker.send("load", timeout, self.budget.cap(), why, source=self.source,
                                             filename=self.filename, max_turns=self.max_turns, **self._where())

    def settle(self) -> None:
        """Finish loading: take the load's answer (at once when a gather of many got it), waiting for it if need be."""
        pending, self.pending_load = self.pending_load, None
        if pending is None:
            return
        outcome = gather([pending])[0]
        if not outcome.ok:
            assert self.worker is not None
            self.worker.end(f"loading the file in it failed: {outcome.message}", outcome.status)
        elif outcome.value["max_turns"] is not None:  # the host caps turns, whatever the file declares
            outcome.value["max_turns"] = min(outcome.value["max_turns"], self.sandbox.config.max_episode_turns)
        self._loaded = outcome

    @property
    def info(self) -> dict[str, Any]:
        """What loading reported: class_name, max_turns (at most ``max_episode_turns``), methods."""
        return self.loaded.value if self.loaded.ok else {}

    def _where(self) -> dict[str, int]:
        """The slot a request goes to, in a worker that hosts several instances."""
        return {"slot": self.slot} if self.share > 1 else {}

    def _leave(self) -> None:
        """Stop using the worker (``Sandbox.release``)."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self.sandbox.release(worker)

    def submit(self, op: str, **args: Any) -> Request:
        """Send a request without waiting (pair with ``gather`` to pipeline many handles)."""
        self.settle()
        if op == "reset":
            needs_new = self.worker is None or not self.worker.alive \
                or self.episodes >= self.sandbox.config.recycle_after or self._scratch_overfull()
            if needs_new:
                self._leave()
                self._send_load()
                self.settle()
            self.episodes += 1
            self.budget.new_episode()
        assert self.worker is not None
        timeout, why = self.budget.limit(self.sandbox.config.step_timeout_s, op)
        return self.worker.send(op, timeout, self.budget.cap(), why, self.budget, **args, **self._where())

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
        self.settle()  # a deferred load is answered first: the worker is never handed back with it in flight
        self._leave()
