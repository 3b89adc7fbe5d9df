"""The episode loop, written once.

Many episodes run at once. By default they run in lockstep: each turn, every
live episode's view goes to the agent in one batch (one forward pass for the
built-in learner), then every action goes to its sandbox worker in one
pipelined round. An agent whose episodes are independent requests (an LLM
server) sets ``lockstep = False``: each episode then goes to the agent on its
own and takes its next turn as soon as its reply is back, so a slow reply
delays only its own episode and the client's work overlaps the server's.
Hints, thinking and tool use are variations of the agent or of the view,
never copies of this loop.

Tool use: an environment that defines ``get_tools`` is a tool-use
environment. Its tools are read at reset and shown in ``View.tools``; a turn
whose action is a tool call (``envfile.parse_tool_call``: the last box holds
``{"name": ..., "arguments": {...}}``) goes to the worker's ``execute_tool``
instead of ``step`` and is recorded in ``Turn.tool_call``; its result is the
next observation (see ``envfile.contract`` for what ``execute_tool`` may
return). Any other action still goes to ``step``. A tool call is a turn: it
counts toward ``max_turns``, and an environment error in it is a failure of
the same category as one in ``step``.

Reference tool-use games (``contract.TOOL_CALL`` format, subclasses of
``ToolUseBaseEnv``) follow the reference's protocol instead: a reply with an
``<answer>`` goes to ``step`` whole; otherwise its ``<tool_call>`` blocks (or a
boxed JSON call) go to ``execute_tool`` together, in one turn
(``Turn.tool_calls``), and a boxed answer goes to ``step`` as ``<answer>...</answer>``. Such tool turns do
not count toward the game's ``max_turns``; the runner's ``max_turns`` bounds the replies.

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

from ..envfile import episode_return, parse_tool_call, strip_thinking, with_hint
from ..envfile.contract import PLAIN, TOOL_CALL
from ..envfile.reference import listed_actions, parse_tagged_calls
from ..executor.base import EnvHost
from ..sandbox import EnvHandle
from .agent import Agent, Reply, View
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
class _LiveEpisode:
    """An episode in flight: its play, its worker, and what the agent has seen so far."""

    play: Play
    key: str
    handle: EnvHandle
    episode: Episode
    observation: str = ""
    valid_actions: list[str] | None = None
    tools: list[dict] | None = None  # None: not a tool-use environment
    action_format: str = PLAIN
    hint: str | None = None
    max_turns: int = 25
    history: list[tuple[str, str]] = field(default_factory=list)
    last_reward: float = 0.0
    started: float = 0.0


class HandlePool:
    """Reuses sandbox workers across episodes of the same environment.

    ``run_episodes`` makes one per call; a caller that plays the same
    environments again and again (a trainer) can pass its own and close it at
    the end, so workers are not reforked and reloaded for every batch.
    """

    def __init__(self, sandbox: EnvHost, limit: int | None = None):
        self.sandbox = sandbox
        self.limit = limit  # most instances kept open; idle ones of other envs are closed first
        self.free: dict[str, list[EnvHandle]] = defaultdict(list)
        self.all: list[EnvHandle] = []

    def take(self, env_id: str, spec: EnvSpec) -> EnvHandle:
        while self.free[env_id]:
            handle = self.free[env_id].pop()
            if handle.source == spec.source and handle.filename == spec.filename:
                return handle
            self._close(handle)  # the id now names other code: never reuse a worker across sources
        if self.limit is not None and len(self.all) >= self.limit:
            self._evict_idle()
        # Where the host allows it, a worker serves several of the pool's instances of a file at once.
        handle = self.sandbox.open(spec.source, spec.filename, share=self.sandbox.episodes_per_worker)
        self.all.append(handle)
        return handle

    def _evict_idle(self) -> None:
        """Close idle workers until there is room: many envs must not mean many processes."""
        for handles in self.free.values():
            while handles and len(self.all) >= (self.limit or 0):
                self._close(handles.pop())

    def _close(self, handle: EnvHandle) -> None:
        handle.close()
        self.all.remove(handle)

    def give(self, env_id: str, handle: EnvHandle) -> None:
        self.free[env_id].append(handle)

    def close(self) -> None:
        for handle in self.all:
            handle.close()


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


class EpisodeRun:
    """One call of ``run_episodes``, as named steps over its shared state, each testable alone.

    ``start`` resets queued plays in one pipelined round; ``listed`` reads the actions an episode
    offers; ``view`` is what the agent sees of an episode; ``ask`` is one agent call; ``route`` says
    where a reply goes; ``record`` keeps the replies and sends the actions; ``out_of_turns`` is the
    turn budget; ``finish`` closes an episode by the return rule; ``play`` runs them until every play is done.
    """

    def __init__(self, sandbox: EnvHost, envs: Mapping[str, EnvSpec], plays: Sequence[Play], agent: Agent,
                 config: RolloutConfig | None = None, on_episode: Callable[[Episode], None] | None = None,
                 handles: HandlePool | None = None):
        self.sandbox, self.envs, self.plays, self.agent = sandbox, envs, plays, agent
        self.config = config or RolloutConfig()
        self.on_episode = on_episode
        self.own_pool = handles is None
        self.pool = handles or HandlePool(sandbox, limit=2 * self.config.concurrency)
        self.queue = deque(_round_robin(plays))
        self.results: dict[int, Episode] = {}
        self.index_of: dict[str, int] = {}
        # An agent that sees only the current observation gets the hint line on every one.
        self.hint_every_step = not agent.keeps_history
        self.lockstep = agent.lockstep  # declared by the agent (see the module docstring)

    def finish(self, item: _LiveEpisode, failure: str | None = None, message: str = "") -> None:
        ep = item.episode
        ep.failure = failure if failure else ep.failure
        ep.failure_message = message or ep.failure_message
        ep.final_observation = item.observation
        ep.ret = episode_return(item.last_reward, ep.terminated) if ep.failure is None else 0.0
        ep.seconds = time.perf_counter() - item.started
        self.pool.give(item.play.env_id, item.handle)  # a dead worker is replaced on its next reset
        self.results[self.index_of.pop(item.key)] = ep
        if self.on_episode is not None:
            self.on_episode(ep)

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
            starting.append(_LiveEpisode(play, key, handle, episode, started=time.perf_counter()))
        if not starting:
            return []
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
            item.valid_actions = self.listed(outcome.value)
            if self.agent.needs_valid_actions and item.valid_actions is None:
                raise RolloutError(
                    f"agent '{self.agent.name}' chooses among valid actions, but environment "
                    f"'{item.play.env_id}' has no valid_actions() method and its observation lists no "
                    "actions; play it with a text agent (openai:MODEL, random, human) or add valid_actions()."
                )
            spec = self.envs[item.play.env_id]
            item.hint = (spec.hint or outcome.value.get("hint")) if item.play.hinted else None
            item.observation = outcome.value["observation"]
            item.tools = outcome.value.get("tools")
            declared = item.handle.info.get("max_turns")
            item.max_turns = declared or self.config.max_turns
            item.action_format = item.handle.info.get("action_format", PLAIN)
            started.append(item)
        return started

    def listed(self, value: dict, previous: list[str] | None = None) -> list[str] | None:
        """The actions a reset or step reply offers; choice agents also get those its observation lists
        (the reference's menus), and keep the previous ones when it lists none."""
        if not self.agent.needs_valid_actions:
            return value.get("valid_actions", previous)
        return listed_actions(value.get("valid_actions"), value["observation"], previous)

    def view(self, item: _LiveEpisode) -> View:
        shown = item.observation
        if item.hint and (self.hint_every_step or not item.history):
            shown = with_hint(shown, item.hint)
        # Only agents that read the conversation get (a copy of) it: copying is O(turns) per turn.
        history = list(item.history) if self.agent.keeps_history else []
        return View(
            episode_key=item.key, observation=shown, history=history,
            valid_actions=item.valid_actions, tools=item.tools, turn=len(item.history),
            max_turns=item.max_turns, hint=item.hint,
        )

    async def ask(self, views: list[View]) -> tuple[list[Reply], float]:
        t0 = time.perf_counter()
        replies = await self.agent.act(views)
        return replies, (time.perf_counter() - t0) / max(1, len(views))

    @staticmethod
    def route(item: _LiveEpisode, reply: Reply) -> tuple[str, dict] | None:
        """Where a reply goes: ``("step", ...)``, ``("tool", ...)`` or ``("tools", ...)``; None is a format failure."""
        if item.action_format == TOOL_CALL:  # the reference's tool-use protocol reads the whole reply
            text = strip_thinking(reply.text).strip()
            calls = [] if "<answer>" in text else parse_tagged_calls(text)
            single = parse_tool_call(reply.action) if reply.action and not calls else None
            if calls or single:
                return "tools", {"calls": [c.to_dict() for c in calls or [single]]}
            if "<answer>" in text:
                return "step", {"action": text}
            # A boxed answer (spadegym's agents box theirs) reaches step as <answer>...</answer>.
            return ("step", {"action": reply.action}) if reply.action is not None else None
        if reply.action is None:
            return None
        call = parse_tool_call(reply.action) if item.tools is not None else None
        if call is not None:
            return "tool", call.to_dict()
        return "step", {"action": reply.action}

    def out_of_turns(self, item: _LiveEpisode) -> bool:
        """Every turn counts toward the game's ``max_turns``, except reference tool turns, which the
        runner's budget bounds instead (``config.max_turns`` replies in all)."""
        turns = item.episode.turns
        if item.action_format != TOOL_CALL:
            return len(turns) >= item.max_turns
        answers = sum(1 for t in turns if t.tool_call is None)
        return answers >= item.max_turns or len(turns) >= self.config.max_turns

    def record(self, answered: list[tuple[_LiveEpisode, View, Reply, float]]) -> list[_LiveEpisode]:
        """Record the replies, send the actions (pipelined across workers); return the episodes that go on."""
        stepping: list[tuple[_LiveEpisode, Turn]] = []
        pendings = []
        going: list[_LiveEpisode] = []
        ended: list[_LiveEpisode] = []
        for item, view, reply, agent_seconds in answered:
            turn = Turn(observation=view.observation, reply=reply.text, action=reply.action,
                        valid_actions=item.valid_actions, seconds=agent_seconds)
            item.episode.turns.append(turn)
            item.history.append((view.observation, reply.text))
            for name, count in reply.tokens.items():
                item.episode.tokens[name] = item.episode.tokens.get(name, 0) + count
            if reply.error is not None:
                self.finish(item, "agent", reply.error)
                ended.append(item)
            elif (request := self.route(item, reply)) is None:
                item.episode.format_failures += 1
                item.observation = f"{item.observation.rstrip()}\n{FORMAT_REMINDER}"
                if self.out_of_turns(item):
                    item.episode.truncated = turn.truncated = True
                    self.finish(item)
                    ended.append(item)
                else:
                    going.append(item)
            else:
                op, args = request
                want = ["valid_actions"] + (["hint"] if item.hint and self.hint_every_step else [])
                if op == "step":
                    turn.action = args["action"]
                else:
                    calls = args["calls"] if op == "tools" else [args]
                    turn.tool_call = calls[0]
                    turn.tool_calls = calls if op == "tools" else None
                pendings.append(item.handle.submit(op, **args, want=want))
                stepping.append((item, turn))
        for (item, turn), outcome in zip(stepping, self.sandbox.gather(pendings)):
            if not outcome.ok:
                where = "execute_tool" if turn.tool_call is not None else "step"
                self.finish(item, outcome.status, f"{where}: {outcome.message}")
                ended.append(item)
                continue
            value = outcome.value
            turn.reward, turn.terminated, turn.truncated = value["reward"], value["terminated"], value["truncated"]
            turn.seconds += outcome.seconds
            item.last_reward = value["reward"]
            item.observation = value["observation"]
            item.valid_actions = self.listed(value, item.valid_actions)
            if item.play.hinted and value.get("hint") and not self.envs[item.play.env_id].hint:
                item.hint = value["hint"]
            ep = item.episode
            ep.terminated, ep.truncated = turn.terminated, turn.truncated
            if not (turn.terminated or turn.truncated) and self.out_of_turns(item):
                ep.truncated = True
            if ep.terminated or ep.truncated:
                self.finish(item)
                ended.append(item)
            else:
                going.append(item)
        if ended:
            self.agent.end_episodes([x.key for x in ended])
        going_ids = {id(x) for x in going}
        return [item for item, *_ in answered if id(item) in going_ids]  # keep the batch order

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
    sandbox: EnvHost,
    envs: Mapping[str, EnvSpec],
    plays: Sequence[Play],
    agent: Agent,
    config: RolloutConfig | None = None,
    on_episode: Callable[[Episode], None] | None = None,
    handles: HandlePool | None = None,
) -> list[Episode]:
    """Play every ``Play`` and return its ``Episode`` (in the order of ``plays``).

    ``sandbox``: where the environments run (a ``Sandbox``, or an executor's host of remote ones).

    ``handles``: a worker pool to reuse (and leave open); by default one is made and closed here.
    """
    return await EpisodeRun(sandbox, envs, plays, agent, config, on_episode, handles).play()
