"""The Ray executor: validation and the episodes' environments spread over actors that each own a sandbox.

The driver keeps the round, the store, the agent and the learner; an actor
(``SandboxActor``) owns one Sandbox (zygote and workers) on its node.

- Validation: each candidate is one actor call that runs the whole gate there.
- Episodes: ``ActorEnvHost`` stands in for a Sandbox in ``run_episodes``: each
  environment handle lives on one actor, and every pipelined round of requests
  (all resets, or all steps of a turn) is one call per actor, the actors
  working at once. The agent acts in the driver, in the same batches as with a
  local sandbox, so a seeded run gives the same episodes either way.

Faults: an actor that dies (process killed, node lost) is an infrastructure
failure, never an environment's. Ray restarts the actor; validation calls it
had are redone elsewhere, and an episode it hosted is rebuilt on another actor
by replaying the episode's requests since its reset (environments are
deterministic per seed), so the agent never notices. After ``ray.retries``
losses the work fails with category ``infra``, which is never scored.
"""

from __future__ import annotations

import importlib
import itertools
import math
import os
import time
from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError, install_hint
from ..level import Level
from ..sandbox import EnvHandle, Outcome, Sandbox, SandboxConfig, gather, sharing
from ..sandbox.protocol import INFRA, OK, failure
from .base import HostedHandle, HostRequest, RayConfig
from .hosts import LevelHost, validate_levels

#: Closed handles an actor is told about in one call (the rest go with the next request there).
CLOSE_BATCH = 8
#: How long a lost actor may take to come back (a new worker process on some node).
RESTART_TIMEOUT_S = 120.0

# (handle id, op, arguments, (source, filename, max_turns) when the actor must open the handle first)
Request = tuple[int, str, dict[str, Any], tuple[str, str, int | None] | None]
# (outcome, the handle's load outcome and info after a reset, else None)
Reply = tuple[Outcome, Outcome | None, dict[str, Any] | None]


class InfrastructureError(UserError):
    """The cluster lost the actors doing some work more often than ``ray.retries`` allows."""


class SandboxActor:
    """One sandbox on one Ray node, serving environment requests and validation by handle id."""

    def __init__(self, config: dict[str, Any], vouching: Sequence[str] = ()):
        for module in vouching:  # the driver's sharing checks, registered here as they are there
            if module.startswith("spadegym."):
                importlib.import_module(module)
        self.sandbox = Sandbox(SandboxConfig(**config))
        self.envs: dict[int, EnvHandle] = {}

    def processes(self) -> dict[str, Any]:
        """This actor's pid, its zygote's and its workers' (for tests and the benchmark)."""
        zygote = self.sandbox._zygote
        return {"actor": os.getpid(), "zygote": zygote.pid if zygote and zygote.poll() is None else None,
                "workers": [w.pid for w in self.sandbox._workers if w.alive]}

    def run(self, closes: list[int], requests: list[Request]) -> list[Reply]:
        """Close handles, then send every request at once and gather the replies (pipelined)."""
        for hid in closes:
            handle = self.envs.pop(hid, None)
            if handle is not None:
                handle.close()
        handles: list[EnvHandle | None] = []
        for hid, _op, _args, opening in requests:
            if opening is not None:
                self.envs[hid] = self.sandbox.open(*opening)
            handles.append(self.envs.get(hid))  # None: this actor restarted and lost it
        live = [(h, op, args) for h, (_hid, op, args, _o) in zip(handles, requests) if h is not None]
        outcomes = iter(gather([h.submit(op, **args) for h, op, args in live]))
        replies: list[Reply] = []
        for handle, (_hid, op, _args, _o) in zip(handles, requests):
            if handle is None:
                replies.append((failure(INFRA, "the actor restarted and no longer holds this environment"),
                                None, None))
            else:
                replies.append((next(outcomes), handle.loaded, handle.info) if op == "reset"
                               else (next(outcomes), None, None))
        return replies

    def replay(self, hid: int, opening: tuple[str, str, int | None],
               requests: list[tuple[str, dict[str, Any]]]) -> list[Reply]:
        """Open a handle and run ``requests`` one after the other (rebuilding an episode lost elsewhere)."""
        handle = self.envs[hid] = self.sandbox.open(*opening)
        replies: list[Reply] = []
        for op, args in requests:
            outcome = handle.request(op, **args)
            replies.append((outcome, handle.loaded, handle.info) if op == "reset" else (outcome, None, None))
        return replies

    def validate(self, level: Level, filename: str, config: Any) -> Any:
        from ..validate import validate_source

        return validate_source(level.source or "", filename, hint=level.hint, sandbox=self.sandbox, config=config)

    def close(self) -> None:
        self.sandbox.close()


@dataclass(eq=False)
class RemoteEnvHandle(HostedHandle):
    """An environment on one actor, with the requests of its current episode (to rebuild it elsewhere)."""

    host: ActorEnvHost
    source: str
    filename: str = "<env>"
    max_turns: int | None = None
    loaded: Outcome = field(default_factory=lambda: Outcome(OK, value={}))  # known after the first reset
    slot: int | None = None  # which actor holds it (None: not opened yet, or lost)
    hid: int = 0
    generation: int = 0  # the actor's generation when it was opened there
    log: list[tuple[str, dict[str, Any], Outcome]] = field(default_factory=list)

    @property
    def info(self) -> dict[str, Any]:
        return self.loaded.value if self.loaded.ok else {}

    def close(self) -> None:
        self.host.discard(self)


class ActorEnvHost:
    """The environments of a rollout, spread over the actors (what ``run_episodes`` plays on)."""

    def __init__(self, executor: RayExecutor):
        self.ex = executor
        self._ids = itertools.count(1)
        self._places = itertools.cycle(range(len(executor.actors)))
        self._closes: dict[int, list[int]] = defaultdict(list)

    #: An actor's sandbox gives each episode a worker of its own (``share`` is accepted and not used).
    episodes_per_worker = 1

    def open(self, source: str, filename: str = "<env>", max_turns: int | None = None,
             share: int = 1) -> RemoteEnvHandle:
        """A handle; the environment loads on its actor with the first request (check ``loaded`` after a reset)."""
        return RemoteEnvHandle(self, source, filename, max_turns)

    def discard(self, handle: RemoteEnvHandle) -> None:
        """Close the handle's worker on its actor: with the next call there, or now once a few are waiting."""
        slot = handle.slot
        handle.slot = None
        if slot is None or handle.generation != self.ex.generation[slot]:
            return
        self._closes[slot].append(handle.hid)
        if len(self._closes[slot]) >= CLOSE_BATCH:
            self.ex.actors[slot].run.remote(self._closes.pop(slot), [])  # ordered before later calls

    def _opening(self, handle: RemoteEnvHandle) -> tuple[str, str, int | None]:
        return handle.source, handle.filename, handle.max_turns

    def gather(self, pendings: list[HostRequest]) -> list[Outcome]:
        """Send each actor its share of the requests in one call; the actors work at once."""
        import ray

        results: list[Outcome | None] = [None] * len(pendings)
        batches: dict[int, list[int]] = defaultdict(list)
        requests: dict[int, list[Request]] = defaultdict(list)
        lost: list[int] = []
        for i, p in enumerate(pendings):
            h = p.handle
            if h.slot is not None and h.generation != self.ex.generation[h.slot]:
                h.slot = None  # its actor died since: the environment is gone with it
            opening = None
            if h.slot is None:
                if p.op != "reset" and h.log:
                    lost.append(i)  # mid-episode: rebuild it by replay
                    continue
                h.slot, h.hid = next(self._places), next(self._ids)
                h.generation = self.ex.generation[h.slot]
                opening = self._opening(h)
            batches[h.slot].append(i)
            requests[h.slot].append((h.hid, p.op, p.args, opening))
        calls = {slot: (self.ex.actors[slot].run.remote(self._closes.pop(slot, []), reqs),
                        self.ex.generation[slot]) for slot, reqs in requests.items()}
        for slot, (ref, generation) in calls.items():
            try:
                replies = ray.get(ref)
            except ray.exceptions.RayActorError:
                self.ex.lost(slot, generation)
                for i in batches[slot]:
                    pendings[i].handle.slot = None
                lost += batches[slot]
                continue
            if any(outcome.status == INFRA for outcome, _l, _i in replies):
                self.ex.lost(slot, generation)  # restarted before our call reached it: a loss all the same
            for i, (outcome, loaded, _info) in zip(batches[slot], replies):
                if outcome.status == INFRA:
                    pendings[i].handle.slot = None
                    lost.append(i)
                else:
                    results[i] = self._record(pendings[i], outcome, loaded)
        for i in sorted(lost):
            results[i] = self._rebuild(pendings[i])
        return results  # type: ignore[return-value] - every slot is filled above

    def _record(self, p: HostRequest, outcome: Outcome, loaded: Outcome | None) -> Outcome:
        if p.op == "reset":
            p.handle.log = []
            if loaded is not None:
                p.handle.loaded = loaded
        p.handle.log.append((p.op, p.args, outcome))
        return outcome

    def _rebuild(self, p: HostRequest) -> Outcome:
        """Open the environment on another actor and replay its episode so far, then send ``p``."""
        import ray

        h = p.handle
        history = [] if p.op == "reset" else [(op, args) for op, args, _ in h.log]
        for _attempt in range(self.ex.config.retries):
            slot, hid = self.ex.live_slot(), next(self._ids)
            generation = self.ex.generation[slot]
            try:
                replies = ray.get(self.ex.actors[slot].replay.remote(hid, self._opening(h), history + [(p.op, p.args)]))
            except ray.exceptions.RayActorError:
                self.ex.lost(slot, generation)
                continue
            h.slot, h.hid, h.generation = slot, hid, generation
            self.ex.count("requests_replayed")
            same = all(new.status == old.status and new.value == old.value
                       for (new, _l, _i), (_op, _a, old) in zip(replies, h.log if history else []))
            if not same:
                self.ex.count("infra_failures")
                return failure(INFRA, "the environment was lost with its actor, and replaying its episode "
                               "did not give the same observations (is it deterministic per seed?)")
            if not history and replies[0][1] is not None:
                h.log, h.loaded = [], replies[0][1]
            outcome = replies[-1][0]
            h.log.append((p.op, p.args, outcome))
            return outcome
        self.ex.count("infra_failures")
        h.slot = None
        return failure(INFRA, f"the actor running this environment was lost {self.ex.config.retries + 1} times "
                       "(ray.retries)")


class RayExecutor:
    """Validation and episodes on ``ray.actors`` sandbox actors; Ray restarts an actor that dies."""

    name = "ray"

    def __init__(self, sandbox: SandboxConfig | None, config: RayConfig):
        try:
            import ray
        except ImportError:
            raise UserError(f"executor 'ray' needs the ray package; install it with: {install_hint('ray')}") from None
        self.config = config
        self.actors: list[Any] = []
        self.host = LevelHost(None)  # the actors' host once they have started
        self._started_ray = False
        if not ray.is_initialized():
            cpus = None if config.address else max(os.cpu_count() or 1, math.ceil(config.actors * config.cpus_per_actor))
            try:
                ray.init(address=config.address, num_cpus=cpus, include_dashboard=False, logging_level="ERROR")
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UserError(f"cannot start or join the Ray cluster at ray.address={config.address!r} "
                                f"({' '.join(str(exc).split())[:160]}); check the address or run `ray start --head`.") from None
            self._started_ray = True
        remote = ray.remote(SandboxActor).options(num_cpus=config.cpus_per_actor, max_restarts=-1, max_task_retries=0)
        settings = (sandbox or SandboxConfig()).model_dump()
        self.actors = [remote.remote(settings, sharing.vouching_modules()) for _ in range(config.actors)]
        self.generation = [0] * config.actors  # bumped when an actor is lost (its environments are gone)
        self._counts: Counter[str] = Counter()
        self._next_live = itertools.cycle(range(config.actors))
        try:
            ray.get([a.processes.remote() for a in self.actors])
        except ray.exceptions.RayActorError as exc:
            self.close()
            raise UserError(f"the Ray sandbox actors did not start ({' '.join(str(exc).split())[:200]}); "
                            "run `spadegym doctor` on the cluster's nodes.") from None
        self.host = LevelHost(ActorEnvHost(self))

    # -- faults -------------------------------------------------------------------
    def lost(self, slot: int, generation: int) -> None:
        """Actor ``slot`` died (its environments with it): count it once, and wait until Ray has restarted it."""
        import ray

        if self.generation[slot] != generation:
            return  # a call that was already on its way to the same dead actor
        self.generation[slot] += 1
        self._counts["actors_lost"] += 1
        deadline = time.monotonic() + RESTART_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                ray.get(self.actors[slot].processes.remote(), timeout=max(0.0, deadline - time.monotonic()))
                return
            except ray.exceptions.RayActorError:
                time.sleep(0.05)  # the call reached the actor before Ray saw it die: ask the restarted one
            except ray.exceptions.GetTimeoutError:
                break
        raise InfrastructureError(f"Ray did not restart sandbox actor {slot} within {RESTART_TIMEOUT_S:.0f}s; "
                                  "check the cluster (`ray status`).")

    def count(self, what: str) -> None:
        self._counts[what] += 1

    def counters(self) -> dict[str, int]:
        return dict(self._counts + Counter(self.host.counters()))

    def describe(self) -> str:
        return f"executor: ray, {len(self.actors)} sandbox actors"

    def live_slot(self) -> int:
        return next(self._next_live)

    # -- validation -----------------------------------------------------------------
    def validate(self, levels: Sequence[Level], config: Any, names: Sequence[str] | None = None) -> list[Any]:
        """One verdict per level, in order; each actor takes the next file when it finishes one."""
        return validate_levels(levels, names, lambda files: self._validate_files(files, config))

    def _validate_files(self, jobs: list[tuple[Level, str]], config: Any) -> list[Any]:
        import ray

        results: list[Any] = [None] * len(jobs)
        queue, free = deque(range(len(jobs))), deque(range(len(self.actors)))
        tries: Counter[int] = Counter()
        running: dict[Any, tuple[int, int, int]] = {}
        while queue or running:
            while queue and free:
                slot, i = free.popleft(), queue.popleft()
                ref = self.actors[slot].validate.remote(*jobs[i], config)
                running[ref] = (i, slot, self.generation[slot])
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                i, slot, generation = running.pop(ref)
                free.append(slot)
                try:
                    results[i] = ray.get(ref)
                except ray.exceptions.RayActorError:
                    self.lost(slot, generation)
                    tries[i] += 1
                    self._counts["validations_redone"] += 1
                    if tries[i] > self.config.retries:
                        raise InfrastructureError(
                            f"Ray lost the actor validating {jobs[i][1]} {tries[i]} times; "
                            "check the cluster (`ray status`) or raise ray.retries.") from None
                    queue.appendleft(i)
        return results

    def close(self) -> None:
        """Close the actors' sandboxes (their scratch trees go too), then end the actors."""
        import ray

        self.host.close()
        try:
            ray.get([a.close.remote() for a in self.actors], timeout=10)
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError):
            pass  # a dead or stuck actor: killing it still ends its zygote and workers
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
