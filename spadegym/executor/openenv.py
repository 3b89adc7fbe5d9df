"""Remote levels: an OpenEnv environment server as a level of a run, played over OpenEnv's WebSocket.

    level = Level(remote=Remote(url="http://127.0.0.1:8000"), skill="Logical Deduction")
    verdict = wire_verdict(level.remote)       # what the gate can check over the wire
    episodes = await run_episodes(executor.host, {"guess": level}, plays, agent)

A remote level's code runs on its server: the level is the server's URL and
how to talk to it (``level.Remote``), a level of kind ``remote`` that only a
run's configuration makes (never a file's content). It is proposed, stored,
scored and replayed like any level. ``OpenEnvHost`` holds the OpenEnv sessions
(OpenEnv's ``GenericEnvClient``) of remote levels; the executor's host
(``base.LevelHost``) sends remote levels to it and files to the sandbox, so the
same runner and agents play both, with spadegym's action and return rules.

Faults: a request that fails on the wire (the server is gone, the connection
drops, a session is refused) is an infrastructure failure, never the level's:
the session is reopened and the episode's requests replayed (servers are
deterministic per seed), ``retries`` times; then the request fails with
category ``infra``, which is never scored. ``counters`` says how often.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..envfile import clip_reward
from ..envfile.contract import PLAIN
from ..errors import UserError
from ..level import Remote
from ..sandbox import Outcome
from ..sandbox.protocol import INFRA, OK, failure
from ..validate.verdict import CONTRACT, NONDETERMINISTIC, WARNING, Check, Verdict
from .base import HostedHandle, HostRequest

#: How long one request over the wire may take before it counts as lost.
REQUEST_TIMEOUT_S = 60.0


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


def observation_text(observation: Any) -> str:
    """The text an agent reads from an OpenEnv observation: its text field, else the whole observation as JSON."""
    if isinstance(observation, dict):
        for key in ("text", "prompt", "message", "observation", "content"):
            if isinstance(observation.get(key), str):
                return observation[key]
        return json.dumps({k: v for k, v in observation.items() if k != "metadata"}, sort_keys=True, default=str)
    return str(observation)


def wire_check(remote: Remote, *, seed: int = 0, probe_action: str | None = None) -> WireCheck:
    """The gate's checks that the wire allows: reset and step answer, data types, seeded determinism.

    The probe step sends ``probe_action`` (default: an action as the level sends its actions).
    """
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError as exc:
        raise UserError(f"checking the OpenEnv server at {remote.url} needs OpenEnv ({exc}); "
                        "install it with pip install 'spadegym[openenv]'.") from None

    url, action_key = remote.url, remote.action_key
    if probe_action is None:
        probe_action = "\\boxed{0}" if remote.send_reply else "0"
    result = WireCheck(url)
    args = dict(remote.reset_args)
    try:
        with GenericEnvClient(base_url=url).sync() as env:
            first = env.reset(seed=seed, **args)
            again = env.reset(seed=seed, **args)
            moved = env.step({action_key: probe_action})
    except Exception as exc:  # noqa: BLE001 - a remote failure of any kind is a failed check
        result.failed["reachable"] = f"{url} did not answer reset/step over OpenEnv's WebSocket ({exc})."
        return result
    result.passed.append("reachable")
    if isinstance(first.observation, dict) and observation_text(first.observation):
        result.passed.append("observation_is_data")
    else:
        result.failed["observation_is_data"] = "reset's observation is not a JSON object with text."
    if observation_text(first.observation) == observation_text(again.observation):
        result.passed.append("seed_determinism")
    else:
        result.failed["seed_determinism"] = (f"reset(seed={seed}) gave two different observations: "
                                             "the server ignores the seed or is not deterministic.")
    if moved.reward is None or isinstance(moved.reward, (int, float)):
        result.passed.append("reward_type")
    else:
        result.failed["reward_type"] = f"step's reward is {type(moved.reward).__name__}, not a number."
    return result


#: The category of each wire check that fails.
_CATEGORY = {"reachable": INFRA, "observation_is_data": CONTRACT, "seed_determinism": NONDETERMINISTIC,
             "reward_type": CONTRACT}
#: What the gate checks of a file and cannot check over the wire: reported as warnings on every remote verdict.
UNCHECKED = {
    "sandboxed": "its code runs on its server, outside spadegym's sandbox and its limits.",
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
    """One OpenEnv session of a remote level; the requests of its episode, to replay after a fault."""

    def __init__(self, host: OpenEnvHost, level: Remote, filename: str):
        self.host, self.level, self.filename = host, level, filename
        self.loaded = Outcome(OK, value={"class_name": "", "max_turns": level.max_turns,
                                         "methods": ["reset", "step"], "action_format": PLAIN})
        self.client: Any = None
        self.log: list[tuple[str, dict[str, Any]]] = []  # this episode's requests so far

    @property
    def info(self) -> dict[str, Any]:
        return self.loaded.value

    def close(self) -> None:
        self.host.forget(self)

    async def run(self, op: str, args: dict[str, Any]) -> Outcome:
        """Send one request; after a fault on the wire, reopen the session and replay the episode first."""
        started = time.perf_counter()
        if op not in ("reset", "step"):
            return failure(CONTRACT, f"a remote level answers reset and step only, not {op}", time.perf_counter() - started)
        history = [] if op == "reset" else list(self.log)
        last = ""
        for attempt in range(self.host.retries + 1):
            try:
                if self.client is None or attempt:
                    await self._reconnect()
                    for old_op, old_args in history:  # rebuild the episode so far
                        await self._send(old_op, old_args)
                value = await self._send(op, args)
            except Exception as exc:  # noqa: BLE001 - a fault on the wire of any kind is infrastructure
                last = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                self.host.count("remote_faults")
                continue
            if attempt:
                self.host.count("remote_requests_replayed")
            self.log = [] if op == "reset" else self.log
            self.log.append((op, args))
            return Outcome(OK, value=value, seconds=time.perf_counter() - started)
        self.host.count("infra_failures")
        await self._disconnect()
        return failure(INFRA, f"the OpenEnv server at {self.level.url} failed {self.host.retries + 1} times ({last})",
                       time.perf_counter() - started)

    async def _send(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op == "reset":
            result = await asyncio.wait_for(self.client.reset(seed=args.get("seed"), **self.level.reset_args),
                                            self.host.timeout_s)
            return {"observation": observation_text(result.observation), "valid_actions": _listed(result.observation),
                    "hint": None, "tools": None}
        action = f"\\boxed{{{args['action']}}}" if self.level.send_reply else args["action"]
        result = await asyncio.wait_for(self.client.step({self.level.action_key: action}), self.host.timeout_s)
        done = bool(result.done)
        return {"observation": observation_text(result.observation), "reward": clip_reward(float(result.reward or 0.0)),
                "terminated": done, "truncated": False, "valid_actions": _listed(result.observation)}

    async def _reconnect(self) -> None:
        from openenv.core.generic_client import GenericEnvClient

        await self._disconnect()
        self.client = GenericEnvClient(base_url=self.level.url)
        await asyncio.wait_for(self.client.connect(), self.host.timeout_s)

    async def _disconnect(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            try:
                await asyncio.wait_for(client.close(), 5)
            except Exception:  # noqa: BLE001, S110 - a session already gone is closed
                pass


def _listed(observation: Any) -> list[str] | None:
    listed = observation.get("valid_actions") if isinstance(observation, dict) else None
    return [str(a) for a in listed] if isinstance(listed, list) else None


class OpenEnvHost:
    """The OpenEnv sessions of remote levels (``LevelHost`` sends them here; files go to the sandbox).

    The sessions live on one event loop in a background thread, so the requests
    of one pipelined round go out together whatever loop the caller runs.
    """

    #: A session hosts one episode.
    episodes_per_worker = 1

    def __init__(self, retries: int = 2, timeout_s: float = REQUEST_TIMEOUT_S):
        self.retries, self.timeout_s = retries, timeout_s
        self.counts: Counter[str] = Counter()
        self.handles: set[RemoteHandle] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closing: list[Any] = []  # sessions being closed in the background

    def open(self, remote: Remote, filename: str = "<env>", max_turns: int | None = None) -> RemoteHandle:
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
        if handle.client is not None and self._loop is not None:
            self._closing.append(asyncio.run_coroutine_threadsafe(handle._disconnect(), self._loop))

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
