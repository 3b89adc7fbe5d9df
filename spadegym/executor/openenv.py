"""Remote levels: an OpenEnv environment server as a level of a run, played over OpenEnv's WebSocket.

    level = Level(remote=Remote(url="http://127.0.0.1:8000"), skill="Logical Deduction")
    verdict = wire_verdict(level.remote)       # what the gate can check over the wire
    episodes = await run_episodes(executor.host, {"guess": level}, plays, agent)

A remote level's code runs on its server: the level is the server's URL and
how to talk to it (``level.Remote``), a level of kind ``remote`` that only a
run's configuration makes (never a file's content). It is proposed, stored,
scored and replayed like any level. ``OpenEnvHost`` holds the OpenEnv sessions
of remote levels (``openenv_wire.Session``: OpenEnv's wire format under the
sandbox's limits); the executor's host (``base.LevelHost``) sends remote levels
to it and files to the sandbox, so the same runner and agents play both, with
spadegym's action and return rules.

A server is as untrusted as a file: its replies are checked as a worker's are,
and an episode has a sandboxed file's budgets (``sandbox.budget.EpisodeBudget``).
What it sends that breaks a rule is the level's failure at once. Faults on the
wire (the server is gone, the connection drops, a session is refused) are
infrastructure, never the level's: the session is reopened and the episode's
requests replayed (servers are deterministic per seed), ``retries`` times; then
the request fails with category ``infra``, which is never scored, up to
``INFRA_LIMIT`` episodes a level: past it the level is retired and its failures
count as its own. ``counters`` says how often.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..envfile import clip_reward
from ..envfile.contract import PLAIN
from ..level import Remote
from ..sandbox import Outcome, SandboxConfig
from ..sandbox.budget import EpisodeBudget
from ..sandbox.protocol import CRASH, INFRA, OK, TIMEOUT, failure
from ..sandbox.schema import Rejected
from ..validate.verdict import CONTRACT, NONDETERMINISTIC, WARNING, Check, Verdict
from .base import HostedHandle, HostRequest
from .openenv_wire import Session, WireFault, observation_text, require_openenv

#: How long one request over the wire may take before it counts as lost (the episode's budget may cut it shorter).
REQUEST_TIMEOUT_S = 60.0
#: Infrastructure failures a remote level may have in a run; past it, its failures count as its own (it is
#: retired): otherwise a server could choose which of its episodes are scored by dropping the ones it loses.
INFRA_LIMIT = 8

__all__ = ["INFRA_LIMIT", "OpenEnvHost", "RemoteHandle", "WireCheck", "observation_text", "wire_check", "wire_verdict"]


# -- what the wire lets the gate check ------------------------------------------

@dataclass
class WireCheck:
    """What can be checked of a remote environment without its code."""

    url: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # check -> one sentence

    @property
    def ok(self) -> bool:
        return not self.failed


def wire_check(remote: Remote, *, seed: int = 0, probe_action: str | None = None,
               config: SandboxConfig | None = None) -> WireCheck:
    """The gate's checks that the wire allows: reset and step answer, within the sandbox's limits and its
    episode time budget, with text and a finite reward; the same seed gives the same first observation.

    The probe step sends ``probe_action`` (default: an action as the level sends its actions).
    """
    require_openenv(remote.url)
    config = config or SandboxConfig()
    if probe_action is None:
        probe_action = "\\boxed{0}" if remote.send_reply else "0"
    url = remote.url
    result = WireCheck(url)
    try:
        first, again = _blocking(_probe(remote, {remote.action_key: probe_action}, seed, config))
    except (WireFault, TimeoutError) as exc:
        said = str(exc) or f"no answer within sandbox.episode_budget_s = {config.episode_budget_s:g}s"
        result.failed["reachable"] = f"{url} did not answer reset/step over OpenEnv's WebSocket ({said})."
        return result
    except Rejected as exc:
        result.passed.append("reachable")
        result.failed["replies_in_limits"] = f"{url} broke the rules a remote level's replies follow: {exc}."
        return result
    result.passed += ["reachable", "replies_in_limits"]
    if first["observation"]:
        result.passed.append("observation_is_data")
    else:
        result.failed["observation_is_data"] = "reset's observation has no text."
    if first["observation"] == again["observation"]:
        result.passed.append("seed_determinism")
    else:
        result.failed["seed_determinism"] = (f"reset(seed={seed}) gave two different observations: "
                                             "the server ignores the seed or is not deterministic.")
    return result


async def _probe(remote: Remote, action: dict[str, Any], seed: int,
                 config: SandboxConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Reset twice with one seed and step once, in one session, within one episode's time budget."""
    session = Session(remote.url, config.reply_limits(), config.line_limit)

    async def talk() -> tuple[dict[str, Any], dict[str, Any]]:
        await session.open()
        first = await session.reset(seed, **remote.reset_args)
        again = await session.reset(seed, **remote.reset_args)
        await session.step(action)
        return first, again

    try:
        return await asyncio.wait_for(talk(), config.episode_budget_s)
    finally:
        await session.close()


def _blocking(coroutine: Any) -> Any:
    """Run a coroutine to its end from synchronous code, on a thread of its own (the caller may be on a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


#: The category of each wire check that fails.
_CATEGORY = {"reachable": INFRA, "replies_in_limits": CONTRACT, "observation_is_data": CONTRACT,
             "seed_determinism": NONDETERMINISTIC}
#: What the gate checks of a file and cannot check over the wire: reported as warnings on every remote verdict.
UNCHECKED = {
    "sandboxed": "its code runs on its server, outside spadegym's sandbox (its replies get the sandbox's limits).",
    "feasible": "it has no solution() to replay, so nothing shows a winning play exists.",
    "degenerate": "the probes that win without skill (random play, listed actions) need its code.",
    "hint_leak": "it has no hint of its own; its regret is measured only with a hint given in its source settings.",
}


def wire_verdict(remote: Remote, check: WireCheck | None = None, filename: str | None = None) -> Verdict:
    """The verdict of a remote level (of ``filename``, else named by its URL): the wire checks, and what the wire
    cannot check as warnings."""
    started = time.perf_counter()
    check = check or wire_check(remote)
    checks = [Check(name, True) for name in check.passed]
    checks += [Check(name, False, message, _CATEGORY.get(name, CONTRACT)) for name, message in check.failed.items()]
    checks += [Check(f"unchecked_{name}", False, message, None, WARNING) for name, message in UNCHECKED.items()]
    return Verdict.from_checks(filename or remote.url, checks, time.perf_counter() - started)


# -- playing remote levels ---------------------------------------------------------

class RemoteHandle(HostedHandle):
    """One OpenEnv session of a remote level; the requests of its episode, to replay after a fault.

    An episode has the budgets of a sandboxed file's (``sandbox.budget.EpisodeBudget``: sandbox.episode_budget_s
    of the server's time, sandbox.episode_chars of text); its replies are checked as a worker's are.
    """

    def __init__(self, host: OpenEnvHost, level: Remote, filename: str):
        self.host, self.level, self.filename = host, level, filename
        self.loaded = Outcome(OK, value={"class_name": "", "max_turns": level.max_turns,
                                         "methods": ["reset", "step"], "action_format": PLAIN})
        self.session: Session | None = None
        self.budget = EpisodeBudget(host.config)
        self.log: list[tuple[str, dict[str, Any]]] = []  # this episode's requests so far

    @property
    def info(self) -> dict[str, Any]:
        return self.loaded.value

    @property
    def key(self) -> str:
        """The level's identity for its infrastructure count: its server and how to talk to it."""
        return self.level.model_dump_json()

    def close(self) -> None:
        self.host.forget(self)

    async def run(self, op: str, args: dict[str, Any]) -> Outcome:
        """One request, within the episode's budgets; a failed one ends the session (the next reset opens another)."""
        started = time.perf_counter()
        if op not in ("reset", "step"):
            return failure(CONTRACT, f"a remote level answers reset and step only, not {op}", time.perf_counter() - started)
        retired = self.host.retired(self)
        if retired:
            return failure(CRASH, retired)
        if op == "reset":
            self.budget.new_episode()
        limit, why = self.budget.limit(self.host.timeout_s, op)
        try:
            outcome = await asyncio.wait_for(self._attempts(op, args), max(limit, 0.0))
        except asyncio.TimeoutError:
            outcome = failure(TIMEOUT, why or f"the OpenEnv server at {self.level.url} did not answer {op} within "
                              f"{limit:.1f}s", time.perf_counter() - started)
        outcome = self.budget.charge(op, time.perf_counter() - started, outcome)
        if not outcome.ok:
            await self._disconnect()
        return outcome

    async def _attempts(self, op: str, args: dict[str, Any]) -> Outcome:
        """Send the request; after a fault on the wire, reopen the session and replay the episode first."""
        started = time.perf_counter()
        history = [] if op == "reset" else list(self.log)
        last = ""
        for attempt in range(self.host.retries + 1):
            try:
                if self.session is None or attempt:
                    await self._reconnect()
                    for old_op, old_args in history:  # rebuild the episode so far
                        await self._send(old_op, old_args)
                value = await self._send(op, args)
            except WireFault as exc:
                last = str(exc)
                self.host.count("remote_faults")
                continue
            except Rejected as exc:  # what the server sent breaks a rule: the level's failure
                return failure(exc.category, f"the OpenEnv server at {self.level.url}: {exc}",
                               time.perf_counter() - started)
            if attempt:
                self.host.count("remote_requests_replayed")
            self.log = [] if op == "reset" else self.log
            self.log.append((op, args))
            return Outcome(OK, value=value, seconds=time.perf_counter() - started)
        return self.host.lost(self, f"the OpenEnv server at {self.level.url} failed {self.host.retries + 1} times "
                              f"({last})", time.perf_counter() - started)

    async def _send(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        if op == "reset":
            value = await self.session.reset(args.get("seed"), **self.level.reset_args)
            return {**value, "hint": None, "tools": None}
        action = f"\\boxed{{{args['action']}}}" if self.level.send_reply else args["action"]
        value = await self.session.step({self.level.action_key: action})
        return {**value, "reward": clip_reward(value["reward"])}

    async def _reconnect(self) -> None:
        await self._disconnect()
        config = self.host.config
        self.session = Session(self.level.url, config.reply_limits(), config.line_limit)
        await self.session.open()

    async def _disconnect(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.close()


class OpenEnvHost:
    """The OpenEnv sessions of remote levels (``LevelHost`` sends them here; files go to the sandbox).

    The sessions live on one event loop in a background thread, so the requests
    of one pipelined round go out together whatever loop the caller runs. Remote
    episodes get the limits of ``config``. A level whose server loses more than
    ``infra_limit`` episodes is retired: its failures count as its own from then on.
    """

    #: A session hosts one episode.
    episodes_per_worker = 1

    def __init__(self, retries: int = 2, timeout_s: float = REQUEST_TIMEOUT_S, config: SandboxConfig | None = None,
                 infra_limit: int = INFRA_LIMIT):
        self.retries, self.timeout_s = retries, timeout_s
        self.config = config or SandboxConfig()
        self.infra_limit = infra_limit
        self.infra_by_level: Counter[str] = Counter()  # episodes each level's server lost
        self.counts: Counter[str] = Counter()
        self.handles: set[RemoteHandle] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closing: list[Any] = []  # sessions being closed in the background

    def open(self, remote: Remote, filename: str = "<env>", max_turns: int | None = None) -> RemoteHandle:
        require_openenv(remote.url)
        if max_turns is not None:
            remote = remote.model_copy(update={"max_turns": max_turns})
        handle = RemoteHandle(self, remote, filename)
        self.handles.add(handle)
        return handle

    def gather(self, pendings: list[HostRequest]) -> list[Outcome]:
        """The requests go out together on the sessions' loop."""
        if not pendings:
            return []
        loop = self._ensure_loop()
        futures = [asyncio.run_coroutine_threadsafe(p.handle.run(p.op, p.args), loop) for p in pendings]
        return [future.result() for future in futures]

    def forget(self, handle: RemoteHandle) -> None:
        """Close a handle's session (in the background)."""
        self.handles.discard(handle)
        if handle.session is not None and self._loop is not None:
            self._closing.append(asyncio.run_coroutine_threadsafe(handle._disconnect(), self._loop))

    def lost(self, handle: RemoteHandle, message: str, seconds: float) -> Outcome:
        """An episode its server lost: infrastructure, never scored, up to ``infra_limit`` a level; past it, the level's."""
        self.count("infra_failures")
        self.infra_by_level[handle.key] += 1
        if self.infra_by_level[handle.key] == self.infra_limit + 1:
            self.count("levels_retired")
        retired = self.retired(handle)
        return failure(CRASH, retired, seconds) if retired else failure(INFRA, message, seconds)

    def retired(self, handle: RemoteHandle) -> str:
        """Why the handle's level is retired (its server lost too many episodes); empty while it is not."""
        lost = self.infra_by_level[handle.key]
        if lost <= self.infra_limit:
            return ""
        return (f"the OpenEnv server at {handle.level.url} lost {lost} episodes, more than the {self.infra_limit} "
                "infrastructure failures a remote level may have: its failures now count as its own")

    def count(self, name: str) -> None:
        self.counts[name] += 1

    def counters(self) -> dict[str, int]:
        """Faults on the wire so far (requests redone, requests lost); never the levels' failures."""
        return dict(self.counts)

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="spadegym-openenv", daemon=True)
                self._thread.start()
            return self._loop

    def close(self) -> None:
        """Close every session and stop the sessions' loop."""
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        closing = self._closing + [asyncio.run_coroutine_threadsafe(h._disconnect(), loop) for h in self.handles]
        for future in closing:
            try:
                future.result(timeout=10)
            except Exception:  # noqa: BLE001, S110 - closing what is already gone
                pass
        self.handles.clear()
        self._closing = []
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None
