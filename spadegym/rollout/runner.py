"""The episode loop, written once.

Many episodes run at once. By default they run in lockstep: each turn, every
live episode's view goes to the agent in one batch (one forward pass for the
built-in learner), then every action goes to its sandbox worker in one
pipelined round. An agent whose episodes are independent requests (an LLM
server) sets ``lockstep = False``: each episode then goes to the agent on its
own and takes its next turn as soon as its reply is back, so a slow reply
delays only its own episode and the client's work overlaps the server's.
Hints, thinking and tool use are variations of the agent or of the view,
never copies of this loop: the rules of a turn (what an agent sees, where a
reply goes, turn budgets, the return and success rule) are ``engine.TurnRules``,
which the adapters' one-reply-at-a-time driver applies too.

Seeds: a play's seed fixes the environment instance, so the hint arm and the
no-hint arm of an environment see the same instance distribution when they
draw seeds from the same ``derive_seed`` stream, and a GRPO group can share
one instance by sharing one seed.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..errors import UserError
from ..executor.base import EnvHost, FileHost
from ..executor.hosts import LevelHost, level_host
from ..level import Level
from ..sandbox import EnvHandle
from .agent import Agent, Reply, View
from .engine import FORMAT_REMINDER, LiveEpisode, TurnRules
from .records import Episode, Turn

__all__ = ["FORMAT_REMINDER", "EpisodeRun", "HandlePool", "Play", "RolloutConfig", "RolloutError",
           "derive_seed", "run_episodes"]


class RolloutConfig(BaseModel):
    """How episodes are played."""

    model_config = {"extra": "forbid"}

    max_turns: int = Field(25, ge=1, description="Turn budget when the environment declares none (paper: 25).")
    concurrency: int = Field(64, ge=1, description="Episodes in flight at once (each holds one sandbox worker).")


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


class RolloutError(UserError, ValueError):
    """The plays cannot run as asked (e.g. a choice agent and an environment without valid_actions): one sentence."""


class HandlePool:
    """Reuses sandbox workers across episodes of the same environment.

    ``run_episodes`` makes one per call; a caller that plays the same
    environments again and again (a trainer) can pass its own and close it at
    the end, so workers are not reforked and reloaded for every batch. Each
    level opens where its kind says (``executor.LevelHost``); a plain sandbox
    is made into such a host here, and that host is closed with the pool.
    """

    def __init__(self, sandbox: EnvHost | FileHost, limit: int | None = None):
        self.host = level_host(sandbox)
        self.own_host = self.host is not sandbox
        self.limit = limit  # most instances kept open; idle ones of other envs are closed first
        self.free: dict[str, list[tuple[Level, EnvHandle]]] = defaultdict(list)
        self.opened: dict[int, Level] = {}  # handle id -> the level it runs
        self.all: list[EnvHandle] = []

    def take(self, env_id: str, level: Level) -> EnvHandle:
        while self.free[env_id]:
            held, handle = self.free[env_id].pop()
            if held.source == level.source and held.remote == level.remote:
                return handle
            self._close(handle)  # the id now names another level: never reuse a worker across sources
        if self.limit is not None and len(self.all) >= self.limit:
            self._evict_idle()
        # Where the host allows it, a worker serves several of the pool's instances of a file at once.
        handle = self.host.open(level, f"{env_id}.py", share=self.host.episodes_per_worker)
        self.opened[id(handle)] = level
        self.all.append(handle)
        return handle

    def _evict_idle(self) -> None:
        """Close idle workers until there is room: many envs must not mean many processes."""
        for handles in self.free.values():
            while handles and len(self.all) >= (self.limit or 0):
                self._close(handles.pop()[1])

    def _close(self, handle: EnvHandle) -> None:
        handle.close()
        self.all.remove(handle)
        self.opened.pop(id(handle), None)

    def give(self, env_id: str, handle: EnvHandle) -> None:
        self.free[env_id].append((self.opened[id(handle)], handle))

    def close(self) -> None:
        for handle in self.all:
            handle.close()
        if self.own_host:
            self.host.close()


def _round_robin(plays: Sequence[Play]) -> list[tuple[int, Play]]:
    """Start plays alternating between environments (each keeps its order).

    Episodes of one environment then share a few workers one after another
    instead of each needing its own: a round of 16 environments x 32 plays at
    concurrency 64 forks ~64 workers instead of ~512. Results keep the order of ``plays``.
    """
    by_env: dict[str, deque[tuple[int, Play]]] = defaultdict(deque)
    for i, play in enumerate(plays):
        by_env[play.env_id].append((i, play))
    order: list[tuple[int, Play]] = []
    while by_env:
        for env_id in list(by_env):
            order.append(by_env[env_id].popleft())
            if not by_env[env_id]:
                del by_env[env_id]
    return order


@dataclass
class _LiveEpisode(LiveEpisode):
    """A live episode of a ``run_episodes`` call: its play as well."""

    play: Play = field(default_factory=lambda: Play("", 0))


class EpisodeRun:
    """One call of ``run_episodes``: the batched driver of the turn rules (``engine.TurnRules``).

    ``start`` resets queued plays in one pipelined round; ``ask`` is one agent call; ``record`` takes
    the replies and sends their requests in one pipelined round; ``finish`` hands a closed episode
    back; ``play`` runs them until every play is done.
    """

    def __init__(self, sandbox: EnvHost | FileHost, envs: Mapping[str, Level], plays: Sequence[Play], agent: Agent,
                 config: RolloutConfig | None = None, on_episode: Callable[[Episode], None] | None = None,
                 handles: HandlePool | None = None):
        self.envs, self.plays, self.agent = envs, plays, agent
        self.config = config or RolloutConfig()
        self.on_episode = on_episode
        self.own_pool = handles is None
        self.pool = handles or HandlePool(sandbox, limit=2 * self.config.concurrency)
        self.sandbox: LevelHost = self.pool.host
        self.queue = deque(_round_robin(plays))
        self.results: dict[int, Episode] = {}
        self.index_of: dict[str, int] = {}
        # An agent that sees only the current observation gets the hint line on every one.
        self.rules = TurnRules(reply_budget=self.config.max_turns, hint_every_step=not agent.keeps_history,
                               keeps_history=agent.keeps_history, choice=agent.needs_valid_actions)
        self.lockstep = agent.lockstep  # declared by the agent (see the module docstring)

    def view(self, item: _LiveEpisode) -> View:
        return self.rules.view(item)

    def finish(self, item: _LiveEpisode, failure: str | None = None, message: str = "") -> None:
        """Close the episode (unless a rule already did), hand its worker back and its record out."""
        if not item.ended:
            self.rules.finish(item, failure, message)
        self.pool.give(item.play.env_id, item.handle)  # a dead worker is replaced on its next reset
        self.results[self.index_of.pop(item.key)] = item.episode
        if self.on_episode is not None:
            self.on_episode(item.episode)

    def start(self, room: int) -> list[_LiveEpisode]:
        """Take up to ``room`` plays from the queue and reset them in one pipelined round."""
        starting: list[_LiveEpisode] = []
        while self.queue and len(starting) < room:
            i, play = self.queue.popleft()
            if play.env_id not in self.envs:
                raise RolloutError(f"play refers to unknown environment '{play.env_id}'")
            key = f"{i}:{play.env_id}:{play.seed}:{int(play.hinted)}"
            self.index_of[key] = i
            handle = self.pool.take(play.env_id, self.envs[play.env_id])
            episode = Episode(env_id=play.env_id, seed=play.seed, hinted=play.hinted, group=play.group)
            starting.append(_LiveEpisode(key, handle, episode, hinted=play.hinted, play=play))
        if not starting:
            return []
        # New handles' loads are waited for at once: their workers load side by side (each handle then reads its own).
        self.sandbox.gather([s.handle.pending_load for s in starting if s.handle.pending_load is not None])
        started: list[_LiveEpisode] = []
        want = ["valid_actions", "hint", "tools"]
        pendings = [s.handle.submit("reset", seed=s.play.seed, want=want) for s in starting]
        for item, outcome in zip(starting, self.sandbox.gather(pendings)):
            if not item.handle.loaded.ok:
                self.finish(item, item.handle.loaded.status, f"load: {item.handle.loaded.message}")
                continue
            if not outcome.ok:
                self.finish(item, outcome.status, f"reset: {outcome.message}")
                continue
            self.rules.begin(item, outcome.value, item.handle.info, self.envs[item.play.env_id].hint)
            if self.agent.needs_valid_actions and item.valid_actions is None:
                raise RolloutError(
                    f"agent '{self.agent.name}' chooses among valid actions, but environment "
                    f"'{item.play.env_id}' ({item.handle.filename}) has no valid_actions() method "
                    "and its observation lists no actions; play it with a text agent (openai:MODEL, random, human) "
                    "or add valid_actions()."
                )
            started.append(item)
        return started

    async def ask(self, views: list[View]) -> tuple[list[Reply], float]:
        t0 = time.perf_counter()
        replies = await self.agent.act(views)
        return replies, (time.perf_counter() - t0) / max(1, len(views))

    def record(self, answered: list[tuple[_LiveEpisode, View, Reply, float]]) -> list[_LiveEpisode]:
        """Take the replies, send their requests (pipelined across workers); return the episodes that go on."""
        sent: list[tuple[_LiveEpisode, Turn]] = []
        pendings = []
        ended: list[_LiveEpisode] = []
        for item, view, reply, agent_seconds in answered:
            turn, request = self.rules.take(item, view, reply, agent_seconds)
            if request is not None:
                op, args = request
                pendings.append(item.handle.submit(op, **args))
                sent.append((item, turn))
            elif item.ended:
                self.finish(item)
                ended.append(item)
        for (item, turn), outcome in zip(sent, self.sandbox.gather(pendings)):
            self.rules.moved(item, turn, outcome)
            if item.ended:
                self.finish(item)
                ended.append(item)
        if ended:
            self.agent.end_episodes([x.key for x in ended])
        return [item for item, *_ in answered if not item.ended]  # keep the batch order

    async def play(self) -> list[Episode]:
        """Play every play; the episodes in the order of the plays."""
        # Episodes waiting for the agent, and agent calls in flight (with the episodes they answer).
        ready: list[_LiveEpisode] = []
        calls: dict[asyncio.Future, tuple[list[_LiveEpisode], list[View]]] = {}
        try:
            while self.queue or ready or calls:
                # 1. Fill free slots with new episodes.
                in_calls = sum(len(group) for group, _ in calls.values())
                ready += self.start(self.config.concurrency - len(ready) - in_calls)
                # 2. Ask the agent: one call for all live episodes (lockstep), or one call per episode.
                if ready and (not self.lockstep or not calls):
                    for group in ([ready] if self.lockstep else [[item] for item in ready]):
                        views = [self.view(item) for item in group]
                        calls[asyncio.ensure_future(self.ask(views))] = (group, views)
                    ready = []
                if not calls:
                    continue
                # 3. Take every answered call, then send its actions.
                finished, _ = await asyncio.wait(calls, return_when=asyncio.FIRST_COMPLETED)
                answered = []
                for call in finished:
                    group, views = calls.pop(call)
                    replies, agent_seconds = call.result()  # an agent that stops the run raises here
                    answered += [(item, view, reply, agent_seconds)
                                 for item, view, reply in zip(group, views, replies)]
                ready += self.record(answered)
        finally:
            for call in calls:
                call.cancel()
            if calls:
                await asyncio.gather(*calls, return_exceptions=True)
            if self.own_pool:
                self.pool.close()
        return [self.results[i] for i in range(len(self.plays))]


async def run_episodes(
    sandbox: EnvHost | FileHost,
    envs: Mapping[str, Level],
    plays: Sequence[Play],
    agent: Agent,
    config: RolloutConfig | None = None,
    on_episode: Callable[[Episode], None] | None = None,
    handles: HandlePool | None = None,
) -> list[Episode]:
    """Play every ``Play`` and return its ``Episode`` (in the order of ``plays``).

    ``sandbox``: where the levels run (an executor's ``host``, or a ``Sandbox`` for files); ``envs``: each
    play's level by its id (a file is opened as ``<id>.py``).

    ``handles``: a worker pool to reuse (and leave open); by default one is made and closed here.
    """
    return await EpisodeRun(sandbox, envs, plays, agent, config, on_episode, handles).play()
