"""The episode loop, written once.

Many episodes run in lockstep: each turn, every live episode's view goes to
the agent in one batch (one forward pass for the built-in learner, concurrent
requests for an LLM), then every action goes to its sandbox worker in one
pipelined round. Hints, thinking and tool use are variations of the agent or
of the view, never copies of this loop.

Seeds: a play's seed fixes the environment instance, so the hint arm and the
no-hint arm of an environment see the same instance distribution when they
draw seeds from the same ``derive_seed`` stream, and a GRPO group can share
one instance by sharing one seed.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..agents.base import Agent, View
from ..envfile import episode_return, with_hint
from ..sandbox import EnvHandle, Sandbox, gather
from .records import Episode, Turn

FORMAT_REMINDER = "Your reply contained no action. Finish your reply with the action in \\boxed{...}."


class RolloutConfig(BaseModel):
    """How episodes are played."""

    model_config = {"extra": "forbid"}

    max_turns: int = Field(25, ge=1, description="Turn budget when the environment declares none (paper: 25).")
    concurrency: int = Field(64, ge=1, description="Episodes in flight at once (each holds one sandbox worker).")


@dataclass
class EnvSpec:
    """An environment to play: its source, and the hint the hint arm receives."""

    env_id: str
    source: str
    filename: str = "<env>"
    hint: str | None = None  # designer-provided hint; None falls back to the file's own hint


@dataclass
class Play:
    """One episode to run."""

    env_id: str
    seed: int
    hinted: bool = False
    group: int = 0


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any parts (run seed, round, env id, group, ...)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


class RolloutError(ValueError):
    """The plays cannot run as asked (e.g. a choice agent and an environment without valid_actions)."""


@dataclass
class _Live:
    play: Play
    key: str
    handle: EnvHandle
    episode: Episode
    observation: str = ""
    valid_actions: list[str] | None = None
    hint: str | None = None
    max_turns: int = 25
    history: list[tuple[str, str]] = field(default_factory=list)
    last_reward: float = 0.0
    started: float = 0.0


class _HandlePool:
    """Reuses sandbox workers across episodes of the same environment."""

    def __init__(self, sandbox: Sandbox, envs: Mapping[str, EnvSpec]):
        self.sandbox, self.envs = sandbox, envs
        self.free: dict[str, list[EnvHandle]] = defaultdict(list)
        self.all: list[EnvHandle] = []

    def take(self, env_id: str) -> EnvHandle:
        if self.free[env_id]:
            return self.free[env_id].pop()
        spec = self.envs[env_id]
        handle = self.sandbox.open(spec.source, spec.filename)
        self.all.append(handle)
        return handle

    def give(self, env_id: str, handle: EnvHandle) -> None:
        self.free[env_id].append(handle)

    def close(self) -> None:
        for handle in self.all:
            handle.close()


async def run_episodes(
    sandbox: Sandbox,
    envs: Mapping[str, EnvSpec],
    plays: Sequence[Play],
    agent: Agent,
    config: RolloutConfig | None = None,
    on_episode: Callable[[Episode], None] | None = None,
) -> list[Episode]:
    """Play every ``Play`` and return its ``Episode`` (in the order of ``plays``)."""
    config = config or RolloutConfig()
    pool = _HandlePool(sandbox, envs)
    queue = deque(enumerate(plays))
    live: list[_Live] = []
    results: dict[int, Episode] = {}
    index_of: dict[str, int] = {}
    want_hint_every_step = not agent.keeps_history

    def finish(item: _Live, failure: str | None = None, message: str = "") -> None:
        ep = item.episode
        ep.failure = failure if failure else ep.failure
        ep.failure_message = message or ep.failure_message
        ep.final_observation = item.observation
        ep.ret = episode_return(item.last_reward, ep.terminated) if ep.failure is None else 0.0
        ep.seconds = time.perf_counter() - item.started
        pool.give(item.play.env_id, item.handle)  # a dead worker is replaced on its next reset
        results[index_of.pop(item.key)] = ep
        if on_episode is not None:
            on_episode(ep)

    try:
        while queue or live:
            # 1. Fill free slots with new episodes and reset them in one pipelined round.
            starting: list[_Live] = []
            while queue and len(live) + len(starting) < config.concurrency:
                i, play = queue.popleft()
                if play.env_id not in envs:
                    raise RolloutError(f"play refers to unknown environment '{play.env_id}'")
                key = f"{i}:{play.env_id}:{play.seed}:{int(play.hinted)}"
                index_of[key] = i
                handle = pool.take(play.env_id)
                episode = Episode(env_id=play.env_id, seed=play.seed, hinted=play.hinted, group=play.group)
                starting.append(_Live(play, key, handle, episode, started=time.perf_counter()))
            if starting:
                want = ["valid_actions", "hint"]
                pendings = [s.handle.submit("reset", seed=s.play.seed, want=want) for s in starting]
                for item, outcome in zip(starting, gather(pendings)):
                    if not item.handle.loaded.ok:
                        finish(item, item.handle.loaded.status, f"load: {item.handle.loaded.message}")
                        continue
                    if not outcome.ok:
                        finish(item, outcome.status, f"reset: {outcome.message}")
                        continue
                    if agent.needs_valid_actions and "valid_actions" not in outcome.value:
                        raise RolloutError(
                            f"agent '{agent.name}' chooses among valid actions, but environment "
                            f"'{item.play.env_id}' has no valid_actions() method; play it with a text agent "
                            "(openai:MODEL, random, human) or add valid_actions()."
                        )
                    spec = envs[item.play.env_id]
                    item.hint = (spec.hint or outcome.value.get("hint")) if item.play.hinted else None
                    item.observation = outcome.value["observation"]
                    item.valid_actions = outcome.value.get("valid_actions")
                    declared = item.handle.info.get("max_turns")
                    item.max_turns = declared or config.max_turns
                    live.append(item)
            if not live:
                continue

            # 2. One agent call for every live episode.
            views = []
            for item in live:
                shown = item.observation
                if item.hint and (want_hint_every_step or not item.history):
                    shown = with_hint(shown, item.hint)
                views.append(View(
                    episode_key=item.key, observation=shown, history=list(item.history),
                    valid_actions=item.valid_actions, turn=len(item.history),
                    max_turns=item.max_turns, hint=item.hint,
                ))
            t0 = time.perf_counter()
            replies = await agent.act(views)
            agent_seconds = (time.perf_counter() - t0) / max(1, len(views))

            # 3. Send the actions, pipelined across workers.
            stepping: list[tuple[_Live, Turn]] = []
            pendings = []
            ended: list[_Live] = []
            for item, view, reply in zip(live, views, replies):
                turn = Turn(observation=view.observation, reply=reply.text, action=reply.action,
                            valid_actions=item.valid_actions, seconds=agent_seconds)
                item.episode.turns.append(turn)
                item.history.append((view.observation, reply.text))
                for name, count in reply.tokens.items():
                    item.episode.tokens[name] = item.episode.tokens.get(name, 0) + count
                if reply.error is not None:
                    finish(item, "agent", reply.error)
                    ended.append(item)
                elif reply.action is None:
                    item.episode.format_failures += 1
                    item.observation = f"{item.observation.rstrip()}\n{FORMAT_REMINDER}"
                    if len(item.episode.turns) >= item.max_turns:
                        item.episode.truncated = turn.truncated = True
                        finish(item)
                        ended.append(item)
                else:
                    want = ["valid_actions"] + (["hint"] if item.hint and want_hint_every_step else [])
                    pendings.append(item.handle.submit("step", action=reply.action, want=want))
                    stepping.append((item, turn))
            for (item, turn), outcome in zip(stepping, gather(pendings)):
                if not outcome.ok:
                    finish(item, outcome.status, f"step: {outcome.message}")
                    ended.append(item)
                    continue
                value = outcome.value
                turn.reward, turn.terminated, turn.truncated = value["reward"], value["terminated"], value["truncated"]
                turn.seconds += outcome.seconds
                item.last_reward = value["reward"]
                item.observation = value["observation"]
                item.valid_actions = value.get("valid_actions", item.valid_actions)
                if item.play.hinted and value.get("hint") and not envs[item.play.env_id].hint:
                    item.hint = value["hint"]
                ep = item.episode
                ep.terminated, ep.truncated = turn.terminated, turn.truncated
                if not (turn.terminated or turn.truncated) and len(ep.turns) >= item.max_turns:
                    ep.truncated = True
                if ep.terminated or ep.truncated:
                    finish(item)
                    ended.append(item)
            if ended:
                done = {id(x) for x in ended}
                live = [x for x in live if id(x) not in done]
                agent.end_episodes([x.key for x in ended])
    finally:
        pool.close()
    return [results[i] for i in range(len(plays))]
