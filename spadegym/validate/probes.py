"""Probing an environment in the sandbox: scripted plays recorded as plain traces.

A probe is a generator that yields sandbox requests ``(handle, op, args)`` and
receives their ``Outcome``s; ``run_lockstep`` drives many probes at once, one
pipelined round per step (``submit`` + ``gather``), each probe on its own handle.
The checks only read the resulting traces. In a tool-use environment an
action that is a tool call goes to ``execute_tool`` as in the rollout (``move``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..envfile import episode_return, parse_tool_call
from ..envfile.reference import listed_actions, parse_tagged_calls
from ..sandbox import EnvHandle, Outcome, gather
from .tool_menu import tool_menu

Request = tuple[EnvHandle, str, dict[str, Any]]
Probe = Generator[Request, Outcome, Any]
#: Chooses the next action from (step index, valid actions or None).
Policy = Callable[[int, "list[str] | None"], str]

# Answers a random policy tries when the environment lists no valid actions.
GENERIC_ANSWERS = ("0", "1", "2", "3", "5", "7", "10", "yes", "no", "a", "b", "c", "up", "down", "left",
                   "right", "north", "south", "east", "west", "look", "help", "done", "start")

# Inputs an agent may send by mistake: each must get an observation back, never a crash.
GARBAGE_ACTIONS = (
    "",
    "x" * 100_000,
    "\u65e5\u672c\u8a9e \u2211 \U0001f3b2 \u200b \u00e9\u0301",
    "I think the answer is 3, because the pattern repeats.",
    "\\boxed{3}",
    "{}[]()<>'\";\\ \t\n",
)
REPEATED_ACTION = "???"


@dataclass
class Trace:
    """One episode (or its prefix): the reset, the actions sent and what came back."""

    seed: int
    reset: Outcome
    actions: list[str] = field(default_factory=list)
    steps: list[Outcome] = field(default_factory=list)

    @property
    def failure(self) -> Outcome | None:
        """The first request that did not come back ok (the trace stops there)."""
        for out in (self.reset, *self.steps):
            if not out.ok:
                return out
        return None

    @property
    def failed_action(self) -> str | None:
        bad = self.failure
        if bad is None or bad is self.reset:
            return None
        return self.actions[self.steps.index(bad)]

    @property
    def first_observation(self) -> str:
        return self.reset.value["observation"] if self.reset.ok else ""

    @property
    def rewards(self) -> list[float]:
        return [s.value["reward"] for s in self.steps if s.ok]

    @property
    def ended(self) -> bool:
        last = self.steps[-1] if self.steps else None
        return bool(last and last.ok and (last.value["terminated"] or last.value["truncated"]))

    @property
    def ret(self) -> float:
        """The episode's return by the one return rule (0 unless it terminated)."""
        last = self.steps[-1] if self.steps else None
        if not (last and last.ok):
            return 0.0
        return episode_return(last.value["reward"], last.value["terminated"])

    def signature(self) -> list[Any]:
        """What two plays of the same instance must agree on."""
        rows: list[Any] = [self.first_observation]
        for action, out in zip(self.actions, self.steps):
            if out.ok:
                v = out.value
                rows.append((action, v["observation"], v["reward"], v["terminated"], v["truncated"]))
            else:
                rows.append((action, out.status))
        return rows


def menu_of(value: dict[str, Any], previous: list[str] | None = None) -> list[str] | None:
    """The actions listed in a reset or step reply (``reference.listed_actions``)."""
    return listed_actions(value.get("valid_actions"), value.get("observation", ""), previous)


def move(handle: EnvHandle, action: str, want: Sequence[str], tools: bool) -> Request:
    """The request one action makes: a tool call when the environment has tools, else a step.

    A tool call is the contract's JSON action, or ``<tool_call>`` blocks (the reference's form, several per turn).
    """
    if tools:
        call = parse_tool_call(action)
        if call is not None:
            return handle, "tool", {"name": call.name, "arguments": call.arguments, "want": list(want)}
        tagged = parse_tagged_calls(action) if "<tool_call>" in action else []
        if tagged and "<answer>" not in action:
            return handle, "tools", {"calls": [c.to_dict() for c in tagged], "want": list(want)}
    return handle, "step", {"action": action, "want": list(want)}


def play(handle: EnvHandle, seed: int, policy: Policy, max_steps: int,
         want: Sequence[str] = ("valid_actions",), tools: bool = False,
         tool_calls: bool = False) -> Generator[Request, Outcome, Trace]:
    """Reset with ``seed`` and play ``policy``'s actions until the episode ends or ``max_steps``.

    ``tool_calls``: in a tool game the policy chooses among calls of the listed tools (``tool_menu``,
    with argument values from everything the episode has shown so far) and a few bare answers, since
    a game that answers tool calls cannot be probed with answers alone.
    """
    trace = Trace(seed, (yield handle, "reset", {"seed": seed, "want": list(want)}))
    if not trace.reset.ok:
        return trace
    schemas: list[Any] = []
    if tool_calls:  # a get_tools() that fails is the tools_listed check's finding; play without tools
        listed = yield handle, "call", {"method": "get_tools", "args": []}
        schemas = listed.value if listed.ok and isinstance(listed.value, list) else []
    texts = [trace.first_observation]
    menu = _tool_menu(schemas, texts, trace.reset.value) if schemas else menu_of(trace.reset.value)
    for i in range(max_steps):
        action = policy(i, menu)
        out = yield move(handle, action, want, tools)
        trace.actions.append(action)
        trace.steps.append(out)
        if not out.ok or out.value["terminated"] or out.value["truncated"]:
            break
        if schemas:
            texts.append(out.value["observation"])
            menu = _tool_menu(schemas, texts, out.value)
        else:
            menu = menu_of(out.value, menu)
    return trace


def _tool_menu(schemas: list[Any], texts: list[str], value: dict[str, Any]) -> list[str]:
    """Calls of the listed tools, then what valid_actions() lists (if the game has it)."""
    return tool_menu(schemas, texts) + list(value.get("valid_actions") or [])


def scripted(actions: Sequence[str]) -> Policy:
    """A policy that plays a fixed list of actions (then repeats the last one)."""
    return lambda i, _menu: actions[min(i, len(actions) - 1)]


def uniform(rng: random.Random) -> Policy:
    """A uniform random choice among the actions listed now (``menu_of``), or among generic short answers."""
    return lambda _i, menu: rng.choice(menu or GENERIC_ANSWERS)


def random_episode_rng(base_seed: int, episode: int) -> random.Random:
    """The random policy's generator for one episode (a twin replays it exactly)."""
    return random.Random(base_seed * 1_000_003 + episode)


def run_lockstep(probes: list[Probe], stop_on: Collection[str] = ()) -> list[Any]:
    """Drive all probes to completion, pipelining one request per probe per round.

    When a round brings an outcome whose status is in ``stop_on``, every probe
    is closed after seeing that round (unfinished probes leave None).
    """
    results: list[Any] = [None] * len(probes)
    current: dict[int, Request] = {}

    def advance(i: int, outcome: Outcome | None) -> None:
        try:
            current[i] = probes[i].send(outcome) if outcome is not None else next(probes[i])
        except StopIteration as stop:
            results[i] = stop.value
            current.pop(i, None)

    for i in range(len(probes)):
        advance(i, None)
    while current:
        order = list(current)
        pendings = [current[i][0].submit(current[i][1], **current[i][2]) for i in order]
        outcomes = gather(pendings)
        for i, outcome in zip(order, outcomes):
            advance(i, outcome)
        if any(o.status in stop_on for o in outcomes):
            for i in list(current):
                probes[i].close()
            break
    return results
