"""One episode at a time, driven from outside: the session every adapter wraps.

The self-play loop drives episodes itself (``rollout.run_episodes``); a
Gymnasium, OpenEnv, verifiers or TRL user drives them from their own code,
one ``reset`` and one ``step`` at a time. ``PlaySession`` is that shape over
the same sandbox and the same rules of a turn (``rollout.engine.TurnRules``,
played here by its one-reply-at-a-time driver): the environment file runs in a
sandbox worker, never in the caller's process, and a reply is read exactly as
the loop reads an agent's reply:

- the reply is reduced to its last ``\\boxed{...}`` (``actions="boxed"``, for
  language models) or passed as it is (``actions="raw"``, for Gymnasium agents);
  a reply without a box is a format failure: a turn, reward 0, and a reminder;
- tool-use environments receive tool calls through ``execute_tool`` (a boxed
  JSON call, or the reference's ``<tool_call>`` blocks in its tool-use games);
- the turn budget is the file's ``max_turns`` or ``max_turns`` here;
- rewards are clipped, and the episode's return and success are the loop's
  (``info["return"]`` and ``info["success"]`` at the end; ``session.episode``
  holds the transcript, the same ``Episode`` record a run stores);
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

from ..envfile import clip_reward, extract_action
from ..errors import UserError
from ..rollout.agent import Reply
from ..rollout.engine import EpisodeStepper, LiveEpisode, TurnRules
from ..rollout.records import Episode, Turn
from ..sandbox import EnvHandle, Sandbox, SandboxConfig
from .level import ServedLevel
from .levels import LevelSource, draw, find_level


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
        self.rules = TurnRules(reply_budget=max_turns, hint_every_step=hint_every_step)
        self.level: ServedLevel | None = None
        self.handle: EnvHandle | None = None
        self.stepper: EpisodeStepper | None = None
        self.seed: int | None = None

    @property
    def episode(self) -> Episode | None:
        """The episode being played (or the last one): the record a run would store."""
        return self.stepper.item.episode if self.stepper else None

    @property
    def done(self) -> bool:
        return self.stepper is None or self.stepper.item.ended

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
        item = LiveEpisode(key=f"{level.level_id}:{seed}", handle=handle, hinted=self.hinted,
                           episode=Episode(env_id=level.level_id, seed=seed, hinted=self.hinted))
        self.rules.begin(item, outcome.value, handle.info, level.hint)
        self.stepper, self.seed = EpisodeStepper(self.rules, item), seed
        return Transition(self.stepper.view().observation, info=self._info())

    def step(self, reply: str) -> Transition:
        """One turn: the reply (or raw action) goes to the environment's ``step`` or ``execute_tool``."""
        if self.done:
            raise SessionError("the episode is over (or never started); call reset() first.")
        assert self.stepper is not None
        action = extract_action(reply) if self.actions == "boxed" else reply
        turn = self.stepper.step(Reply(text=reply, action=action))
        item = self.stepper.item
        info = self._info(turn)
        if item.ended:
            episode = item.episode
            info.update({"return": episode.ret, "success": episode.success})
            if episode.failure is not None:  # the environment failed: the episode ends as data
                info.update(failure=episode.failure, failure_message=episode.failure_message)
                return Transition(item.observation, 0.0, False, True, info)
        return Transition(self.stepper.view().observation, clip_reward(turn.reward), turn.terminated,
                          turn.truncated or item.episode.truncated, info)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    # -- inside ----------------------------------------------------------------
    def _handle_for(self, level: ServedLevel) -> EnvHandle:
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

    def _info(self, turn: Turn | None = None) -> dict[str, Any]:
        """What every transition's ``info`` holds (the action of a turn, and its format failure)."""
        assert self.stepper is not None
        item = self.stepper.item
        info: dict[str, Any] = {"level": self.level.level_id if self.level else None, "seed": self.seed,
                                "turn": len(item.episode.turns)}
        if turn is not None:
            if turn.action is None and turn.tool_call is None and item.episode.failure != "agent":
                info["format_failure"] = True
            else:
                info["action"] = turn.action
        if item.valid_actions is not None:
            info["valid_actions"] = item.valid_actions
        if item.tools is not None:
            info["tools"] = item.tools
        return info

    def __enter__(self) -> PlaySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
