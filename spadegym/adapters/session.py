"""One episode at a time, driven from outside: the session every adapter wraps.

The self-play loop drives episodes itself (``rollout.run_episodes``); a
Gymnasium, OpenEnv, verifiers or TRL user drives them from their own code,
one ``reset`` and one ``step`` at a time. ``PlaySession`` is that shape over
the same sandbox: the environment file runs in a sandbox worker, never in the
caller's process, and spadegym's rules apply on the host exactly as in a run:

- the reply is reduced to its last ``\\boxed{...}`` (``actions="boxed"``, for
  language models) or passed as it is (``actions="raw"``, for Gymnasium agents);
  a reply without a box is a format failure: a turn, reward 0, and a reminder;
- tool-use environments receive a boxed JSON tool call through ``execute_tool``;
- the turn budget is the file's ``max_turns`` or ``max_turns`` here;
- rewards are clipped, and the episode's return is the one return rule
  (``envfile.episode_return``), reported in ``info["return"]`` at the end;
- the hint arm shows the hint line (the designer's hint, else the file's own).

A failure inside the environment (timeout, crash, exception, ...) ends the
episode with ``truncated=True`` and ``info["failure"]`` set; it is never an
exception in the caller. Only a level that cannot be loaded or reset raises
``SessionError`` (one sentence).
"""

from __future__ import annotations

import atexit
import os
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from ..envfile import clip_reward, episode_return, extract_action, parse_tool_call, with_hint
from ..errors import UserError
from ..rollout.runner import FORMAT_REMINDER
from ..sandbox import EnvHandle, Sandbox, SandboxConfig
from .levels import Level, LevelSource, draw, find_level


class SessionError(UserError):
    """A level cannot be started (it does not load, or its reset fails): the message says which and why."""


_shared: dict[int, Sandbox] = {}
_shared_lock = threading.Lock()


def shared_sandbox(config: SandboxConfig | None = None) -> Sandbox:
    """One sandbox (zygote) per process for every session that does not bring its own; closed at exit."""
    pid = os.getpid()  # a forked child (a vector env's worker) must not share its parent's zygote
    with _shared_lock:
        if pid not in _shared:
            _shared[pid] = Sandbox(config)
            atexit.register(_shared[pid].close)
        return _shared[pid]


@dataclass
class Transition:
    """What ``reset`` (reward 0, not done) and ``step`` return."""

    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class PlaySession:
    """Play levels from ``source`` one episode at a time, in sandbox workers.

        session = PlaySession(open_levels("pool/"))
        first = session.reset(seed=3)                 # draws a level (or pass level_id=...)
        after = session.step("I open it: \\\\boxed{open door}")
        after.reward, after.done, after.info["return"]
    """

    def __init__(self, source: LevelSource, *, sandbox: Sandbox | None = None,
                 actions: Literal["boxed", "raw"] = "boxed", hinted: bool = False,
                 hint_every_step: bool = False, max_turns: int = 25):
        self.source = source
        self.sandbox = sandbox
        self.actions = actions
        self.hinted = hinted
        self.hint_every_step = hint_every_step
        self.max_turns = max_turns
        self.level: Level | None = None
        self.handle: EnvHandle | None = None
        self.turns = 0
        self.last_reward = 0.0
        self.done = True
        self.hint: str | None = None
        self.tools: list[dict[str, Any]] | None = None
        self.observation = ""
        self.valid_actions: list[str] | None = None
        self.seed: int | None = None

    # -- the two calls ---------------------------------------------------------
    def reset(self, seed: int | None = None, level_id: str | None = None) -> Transition:
        """Start an episode: ``level_id`` (or a level drawn by weight with ``seed``), instance ``seed``."""
        rng = random.Random(seed)
        seed = rng.getrandbits(31) if seed is None else seed
        levels = self.source.levels()
        level = find_level(levels, level_id) if level_id else draw(levels, rng)
        handle = self._handle_for(level)
        outcome = handle.reset(seed=seed, want=["valid_actions", "hint", "tools"])
        if not outcome.ok:
            raise SessionError(f"level {level.level_id}: reset failed ({outcome.status}): {outcome.message}")
        value = outcome.value
        self.seed, self.turns, self.last_reward, self.done = seed, 0, 0.0, False
        self.hint = (level.hint or value.get("hint")) if self.hinted else None
        self.tools = value.get("tools")
        self.observation = value["observation"]
        self.valid_actions = value.get("valid_actions")
        return Transition(self._shown(first=True), info=self._info(self.valid_actions))

    def step(self, reply: str) -> Transition:
        """One turn: the reply (or raw action) goes to the environment's ``step`` or ``execute_tool``."""
        if self.done or self.handle is None:
            raise SessionError("the episode is over (or never started); call reset() first.")
        self.turns += 1
        action = extract_action(reply) if self.actions == "boxed" else reply
        if action is None:  # a format failure: a turn with reward 0, and the reminder
            self.observation = f"{self.observation.rstrip()}\n{FORMAT_REMINDER}"
            return self._moved(0.0, False, False, {"format_failure": True, "valid_actions": self.valid_actions})
        want = ["valid_actions"] + (["hint"] if self.hinted else [])
        call = parse_tool_call(action) if self.tools is not None else None
        if call is None:
            outcome = self.handle.step(action, want=want)
        else:
            outcome = self.handle.tool(call.name, call.arguments, want=want)
        if not outcome.ok:
            self.done = True
            return Transition(self.observation, 0.0, False, True, self._info(
                None, action=action, failure=outcome.status, failure_message=outcome.message, ret=0.0))
        value = outcome.value
        self.observation = value["observation"]
        self.valid_actions = value.get("valid_actions", self.valid_actions)
        if self.hinted and value.get("hint") and not (self.level and self.level.hint):
            self.hint = value["hint"]
        return self._moved(value["reward"], value["terminated"], value["truncated"],
                           {"action": action, "valid_actions": self.valid_actions})

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    # -- inside ----------------------------------------------------------------
    def _handle_for(self, level: Level) -> EnvHandle:
        """Reuse the worker while the level stays the same; load the new file otherwise."""
        if self.handle is not None and self.level == level:
            return self.handle
        self.close()
        sandbox = self.sandbox or shared_sandbox()
        handle = sandbox.open(level.source, level.filename)
        if not handle.loaded.ok:
            handle.close()
            raise SessionError(f"level {level.level_id} does not load ({handle.loaded.status}): "
                               f"{handle.loaded.message}; run `spadegym validate` on it.")
        self.handle, self.level = handle, level
        return handle

    def _moved(self, reward: float, terminated: bool, truncated: bool, extra: dict[str, Any]) -> Transition:
        reward = clip_reward(reward)
        self.last_reward = reward
        budget = (self.handle.info.get("max_turns") if self.handle else None) or self.max_turns
        if not (terminated or truncated) and self.turns >= budget:
            truncated = True
        self.done = terminated or truncated
        valid = extra.pop("valid_actions", None)
        info = self._info(valid, **extra)
        if self.done:
            info["return"] = episode_return(reward, terminated)
            info["success"] = info["return"] > 0.0
        return Transition(self._shown(first=False), reward, terminated, truncated, info)

    def _shown(self, first: bool) -> str:
        show_hint = self.hint and (first or self.hint_every_step)
        return with_hint(self.observation, self.hint) if show_hint else self.observation

    def _info(self, valid_actions: list[str] | None, ret: float | None = None, **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {"level": self.level.level_id if self.level else None, "seed": self.seed,
                                "turn": self.turns, **extra}
        if valid_actions is not None:
            info["valid_actions"] = valid_actions
        if self.tools is not None:
            info["tools"] = self.tools
        if ret is not None:
            info["return"] = ret
            info["success"] = False
        return info

    def __enter__(self) -> PlaySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
