"""The rules of a turn, written once: what an episode shows, where a reply goes, when it ends.

An episode is a ``LiveEpisode`` (its play, its worker, what the agent has seen)
and ``TurnRules`` apply the contract to it, step by step:

- ``begin``: read a reset reply (observation, listed actions, tools, hint, the
  file's turn budget and action format);
- ``view``: what the agent sees now (the hint line where the agent reads it);
- ``take``: record a reply as a turn and say what it sends, ``route``: where a
  reply goes (``step``, a tool call, the reference's tool calls, or nowhere: a
  format failure, answered with ``FORMAT_REMINDER``);
- ``moved``: read the worker's answer; ``finish``: close the episode by the one
  return rule (``envfile.episode_return``) and the one success rule.

Tool use: an environment whose reset lists tools (``get_tools``) is a tool-use
environment; its tools are shown in ``View.tools``. An action that is a tool
call (``envfile.parse_tool_call``: the last box holds ``{"name": ...,
"arguments": {...}}``) goes to the worker's ``execute_tool`` instead of
``step`` and is recorded in ``Turn.tool_call``; its result is the next
observation. Any other action still goes to ``step``. A reply without a box
is read by the reference's text protocol (``text_protocol_request``): its
first ``<tool_call>`` block is the call, else its ``<answer>`` the answer. A tool call is a turn:
it counts toward ``max_turns``, and an environment error in it is a failure of
the same category as one in ``step``. Reference tool-use games (the
``tool_call`` action format) follow the reference's protocol instead: a reply
with an ``<answer>`` goes to ``step`` whole; otherwise its ``<tool_call>``
blocks (or a boxed JSON call) go to ``execute_tool`` together, in one turn
(``Turn.tool_calls``), and a boxed answer goes to ``step`` as
``<answer>...</answer>``. Such tool turns do not count toward the game's
``max_turns``; the runner's budget bounds the replies.

Two drivers move episodes through these steps: ``runner.EpisodeRun`` batches
many episodes (one agent call and one pipelined worker round per turn, for the
loop), and ``EpisodeStepper`` plays one reply at a time (the adapters'
``PlaySession``). Neither decides anything a rule here decides, so the loop and
the adapters give the same return, success and transcript for the same file,
seed and replies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..envfile import episode_return, extract_action, parse_tool_call, strip_thinking, with_hint
from ..envfile.contract import PLAIN, TOOL_CALL, answer_tag, reference_box
from ..envfile.reference import listed_actions, parse_tagged_calls
from ..sandbox import EnvHandle, Outcome
from .agent import Reply, View
from .records import Episode, Turn

FORMAT_REMINDER = "Your reply contained no action. Finish your reply with the action in \\boxed{...}."

#: A request for the episode's worker: an operation and its arguments.
Request = tuple[str, dict[str, Any]]


@dataclass
class LiveEpisode:
    """An episode in flight: its record, its worker, and what the agent has seen so far."""

    key: str  # unique among the episodes in flight (agents keep per-episode state by it)
    handle: EnvHandle
    episode: Episode
    hinted: bool = False
    observation: str = ""
    valid_actions: list[str] | None = None
    tools: list[dict] | None = None  # None: not a tool-use environment
    action_format: str = PLAIN
    hint: str | None = None
    fixed_hint: bool = False  # the designer's hint: never replaced by the file's own
    max_turns: int = 25
    history: list[tuple[str, str]] = field(default_factory=list)
    last_reward: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    ended: bool = False


@dataclass
class TurnRules:
    """The contract's rules of a turn, with the settings that vary by driver and agent.

    ``reply_budget``: the runner's turn budget (the file's own ``max_turns`` wins;
    reference tool-use games are bounded by it). ``hint_every_step``: the agent sees
    only the current observation, so the hint line goes on every one. ``keeps_history``:
    the view carries the conversation. ``choice``: the agent picks among listed actions.
    """

    reply_budget: int = 25
    hint_every_step: bool = False
    keeps_history: bool = False
    choice: bool = False

    # -- reset -------------------------------------------------------------------------------------
    def begin(self, item: LiveEpisode, value: dict[str, Any], info: dict[str, Any],
              designer_hint: str | None = None) -> None:
        """Read a reset reply (``value``) and the loaded file's ``info`` into the episode."""
        item.valid_actions = self.listed(value)
        item.fixed_hint = bool(designer_hint)
        item.hint = (designer_hint or value.get("hint")) if item.hinted else None
        item.observation = value["observation"]
        item.tools = value.get("tools")
        item.max_turns = info.get("max_turns") or self.reply_budget
        item.action_format = info.get("action_format", PLAIN)

    def listed(self, value: dict[str, Any], previous: list[str] | None = None) -> list[str] | None:
        """The actions a reset or step reply offers; choice agents also get those its observation lists
        (the reference's menus), and keep the previous ones when it lists none."""
        if not self.choice:
            return value.get("valid_actions", previous)
        return listed_actions(value.get("valid_actions"), value["observation"], previous)

    def wants(self, item: LiveEpisode) -> list[str]:
        """What a step or tool reply should bring besides the observation."""
        return ["valid_actions"] + (["hint"] if item.hint and self.hint_every_step else [])

    # -- one turn ----------------------------------------------------------------------------------
    def view(self, item: LiveEpisode) -> View:
        shown = item.observation
        if item.hint and (self.hint_every_step or not item.history):
            shown = with_hint(shown, item.hint)
        # Only agents that read the conversation get (a copy of) it: copying is O(turns) per turn.
        history = list(item.history) if self.keeps_history else []
        return View(
            episode_key=item.key, observation=shown, history=history,
            valid_actions=item.valid_actions, tools=item.tools, turn=len(item.history),
            max_turns=item.max_turns, hint=item.hint,
            play=f"{item.episode.env_id}:{item.episode.seed}:{int(item.hinted)}",
        )

    @staticmethod
    def route(item: LiveEpisode, reply: Reply) -> Request | None:
        """Where a reply goes: ``("step", ...)``, ``("tool", ...)`` or ``("tools", ...)``; None is a format failure.

        The rule in force is the file's: spadegym's own (``plain``) files get the agent's action (its
        last box), and a reply without one is a format failure; files in the reference's conventions
        (``boxed``, ``tool_call``) get what the reference's rollout sends (``reference_request``).
        """
        if item.action_format != PLAIN:
            return reference_request(item.action_format, reply)
        if reply.action is None and item.tools is not None:
            return text_protocol_request(reply)
        if reply.action is None:
            return None
        call = parse_tool_call(reply.action) if item.tools is not None else None
        if call is not None:
            return "tool", call.to_dict()
        return "step", {"action": reply.action}

    def out_of_turns(self, item: LiveEpisode) -> bool:
        """Every turn counts toward the game's ``max_turns``, except reference tool turns, which the
        runner's budget bounds instead (``reply_budget`` replies in all)."""
        turns = item.episode.turns
        if item.action_format != TOOL_CALL:
            return len(turns) >= item.max_turns
        answers = sum(1 for t in turns if t.tool_call is None)
        return answers >= item.max_turns or len(turns) >= self.reply_budget

    def take(self, item: LiveEpisode, view: View, reply: Reply, seconds: float = 0.0) -> tuple[Turn, Request | None]:
        """Record ``reply`` (to ``view``) as a turn; the request it sends, or None when nothing is sent.

        Nothing is sent after an agent error (the episode is over: ``item.ended``) or a
        format failure (the reminder is added to the observation; the turn counts).
        """
        turn = Turn(observation=view.observation, reply=reply.text, action=reply.action,
                    valid_actions=item.valid_actions, seconds=seconds)
        item.episode.turns.append(turn)
        item.episode.trace_ref = reply.trace_ref or item.episode.trace_ref
        item.history.append((view.observation, reply.text))
        for name, count in reply.tokens.items():
            item.episode.tokens[name] = item.episode.tokens.get(name, 0) + count
        if reply.error is not None:
            self.finish(item, "agent", reply.error)
            return turn, None
        request = self.route(item, reply)
        if request is None:
            item.episode.format_failures += 1
            item.observation = f"{item.observation.rstrip()}\n{FORMAT_REMINDER}"
            if self.out_of_turns(item):
                item.episode.truncated = turn.truncated = True
                self.finish(item)
            return turn, None
        op, args = request
        if op == "step":
            turn.action = args["action"]
        else:
            calls = args["calls"] if op == "tools" else [args]
            turn.tool_call = calls[0]
            turn.tool_calls = calls if op == "tools" else None
        return turn, (op, {**args, "want": self.wants(item)})

    def moved(self, item: LiveEpisode, turn: Turn, outcome: Outcome) -> None:
        """Read the worker's answer to a turn's request; the episode may end (``item.ended``)."""
        if not outcome.ok:
            where = "execute_tool" if turn.tool_call is not None else "step"
            self.finish(item, outcome.status, f"{where}: {outcome.message}")
            return
        value = outcome.value
        turn.reward, turn.terminated, turn.truncated = value["reward"], value["terminated"], value["truncated"]
        turn.seconds += outcome.seconds
        item.last_reward = value["reward"]
        item.observation = value["observation"]
        item.valid_actions = self.listed(value, item.valid_actions)
        if item.hinted and value.get("hint") and not item.fixed_hint:
            item.hint = value["hint"]
        ep = item.episode
        ep.terminated, ep.truncated = turn.terminated, turn.truncated
        if not (turn.terminated or turn.truncated) and self.out_of_turns(item):
            ep.truncated = True
        if ep.terminated or ep.truncated:
            self.finish(item)

    # -- the end -----------------------------------------------------------------------------------
    @staticmethod
    def finish(item: LiveEpisode, failure: str | None = None, message: str = "") -> None:
        """Close the episode: a failure (``failure``: its category) scores 0, else the return rule."""
        ep = item.episode
        ep.failure = failure if failure else ep.failure
        ep.failure_message = message or ep.failure_message
        ep.final_observation = item.observation
        ep.ret = episode_return(item.last_reward, ep.terminated) if ep.failure is None else 0.0
        ep.seconds = time.perf_counter() - item.started
        item.ended = True


def text_protocol_request(reply: Reply) -> Request | None:
    """A reply without a box in a spadegym tool game, read by the reference's text protocol: its first
    ``<tool_call>`` block is the tool call (one action per turn), else its last ``<answer>`` the answer;
    None (a format failure) when it holds neither."""
    calls = parse_tagged_calls(reply.text)
    if calls:
        return "tool", calls[0].to_dict()
    answer = answer_tag(reply.text)
    return ("step", {"action": answer}) if answer else None


def reference_request(action_format: str, reply: Reply) -> Request:
    """What the reference's rollout sends for a reply, in a file in its conventions (never a format failure).

    ``boxed`` files: the reply's first box, re-wrapped (``contract.reference_box``); a reply
    without a box goes to ``step`` as written (``raw``: the worker hands it over unchanged), so games
    that read ``<answer>`` tags or free text see what they would there. ``tool_call`` files: a reply
    with an ``<answer>`` goes to ``step`` whole; otherwise its ``<tool_call>`` blocks (JSON or the
    Qwen3.5 XML form) go to ``execute_tool`` together; any other reply goes to ``step`` as written.

    Two spadegym additions, for agents that box their actions: an action the agent chose itself
    (a choice agent's bare action, a forgiving reading) stands, and in tool-use games a boxed JSON
    call is a tool call and a boxed answer reaches ``step`` as ``<answer>...</answer>``.
    """
    text = strip_thinking(reply.text).strip()
    if action_format == TOOL_CALL:
        if "<answer>" in text:
            return "step", {"action": text, "raw": True}
        calls = parse_tagged_calls(text)
        single = parse_tool_call(reply.action) if reply.action and not calls else None
        if calls or single:
            return "tools", {"calls": [c.to_dict() for c in calls or [single]]}
        if reply.action is not None:
            return "step", {"action": reply.action}  # the worker wraps it in <answer></answer>
        return "step", {"action": text, "raw": True}
    box = reference_box(text)
    chose = reply.action is not None and (box is None or reply.action != extract_action(reply.text))
    if chose:
        return "step", {"action": reply.action}
    if box is not None:
        return "step", {"action": box}
    return "step", {"action": text, "raw": True}


class EpisodeStepper:
    """One episode played one reply at a time (the adapters' driver of ``TurnRules``).

        stepper = EpisodeStepper(rules, item)        # after rules.begin(item, ...)
        turn = stepper.step(Reply(text, action))     # the recorded turn; stepper.item.ended at the end
    """

    def __init__(self, rules: TurnRules, item: LiveEpisode):
        self.rules, self.item = rules, item

    def view(self) -> View:
        return self.rules.view(self.item)

    def step(self, reply: Reply) -> Turn:
        turn, request = self.rules.take(self.item, self.view(), reply)
        if request is not None:
            op, args = request
            outcome = self.item.handle.request(op, **args)
            self.rules.moved(self.item, turn, outcome)
        return turn
