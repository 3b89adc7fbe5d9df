"""The environment file contract: the rules every part of spadegym shares.

An environment is one standalone Python source file (standard library only)
defining exactly one top-level class whose name ends in ``Env``::

    import random

    SKILL = "Logical Deduction"          # optional metadata
    DIFFICULTY = {"size": 4}

    class GuessEnv:
        max_turns = 8                     # optional: turn budget
        def reset(self, seed=None):       # -> (observation: str, info: dict)
            self.secret = random.randint(1, 10)
            return "Guess a number in 1..10. Answer in \\boxed{}.", {}
        def step(self, action):           # -> (obs, reward, terminated, truncated, info)
            if action.strip() == str(self.secret):
                return "Correct!", 1.0, True, False, {}
            return "Wrong.", 0.0, False, False, {}
        def valid_actions(self):          # optional: legal actions now
            return [str(i) for i in range(1, 11)]
        def solution(self):               # optional: actions that win this instance
            return [str(self.secret)]
        def hint(self):                   # optional: privileged hint (or a class attribute)
            return "Binary search is not needed: the number is " + ...

``reset`` may also return a bare string; ``step`` may return the old
4-tuple ``(obs, reward, done, info)``, read as ``terminated=done``.

Tool-use environments are those that define ``get_tools(self)`` (a list of
tool schemas, each a dict naming its tool: ``{"name": ..., "description": ...,
"parameters": {...}}`` or OpenAI's ``{"type": "function", "function": {...}}``)
and ``execute_tool(self, name, arguments)``. The agent's reply is reduced to
its last ``\\boxed{}`` as always; when that content is a tool call (a JSON
object ``{"name": str, "arguments": {...}}``, see ``parse_tool_call``) it goes
to ``execute_tool`` instead of ``step``, and anything else still goes to
``step`` (so a game may mix tool calls and a final answer). ``execute_tool``
may return the ``step`` tuple (the tool ends the episode or pays a reward) or
any other value, which is the tool's result: shown to the agent as the next
observation (a string as is, anything else as JSON), with reward 0 and the
episode going on. Every tool call is a turn (it counts toward ``max_turns``),
except in ``tool_call``-format files (below), which follow the reference's rule.
``execute_tool`` should answer an unknown tool or bad arguments with an error
result rather than raise: a raise is the environment's ``exception`` failure.

Action formats. The agent's reply is always reduced to the content of its
last ``\\boxed{}`` (``extract_action``); ``deliver_action`` then hands it to
``step`` in the form the file expects, declared by a module constant
``ACTION_FORMAT`` or else detected from the code (``reference.action_format``):

- ``"plain"`` (spadegym's own files): the bare content, ``north``;
- ``"boxed"`` (files whose ``step`` parses the box itself, as the SPADE
  reference's games do): the content wrapped again, ``\\boxed{north}``;
- ``"tool_call"`` (subclasses of the reference's ``ToolUseBaseEnv``): each
  ``<tool_call>{...}</tool_call>`` of the reply goes to ``execute_tool`` (all of
  them, in order, in one turn); a reply with an ``<answer>...</answer>`` goes to
  ``step`` whole, thinking removed; a boxed answer reaches ``step`` as
  ``<answer>content</answer>``. Tool calls do not count toward the game's
  ``max_turns``; the runner's turn budget bounds the replies.

Success: an episode is a win when its return is the full reward (1.0);
partial terminal credit (0.7 on a time-out path) is return, not success.

SPADE reference files load unchanged: ``REFERENCE_CONVENTIONS`` names each
convention of the reference (spade-rl/spade) that spadegym supports, and how.

The functions here are the single place where these rules live: the sandbox
worker, the validator, the rollout and the exports all call them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

#: Reward and return bounds: rewards outside are clamped on the host.
REWARD_LIMIT = 1.0
#: The one fixed form in which a hint reaches an agent.
HINT_PREFIX = "hint: "

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{")
_BRACE = re.compile(r"[{}]")


def strip_thinking(reply: str) -> str:
    """Remove ``<think>...</think>`` blocks; an unclosed ``<think>`` hides the rest.

    Linear in the reply's length, whatever it holds (a reply is untrusted input: a regex
    searching for each block's end from every ``<think>`` took seconds on a long one).
    """
    kept, start, opened = [], 0, -1
    for tag in _THINK_TAG.finditer(reply):  # a block runs from a <think> to the first </think> after it
        if opened < 0 and not tag.group(1):
            kept.append(reply[start:tag.start()])
            opened = tag.start()
        elif opened >= 0 and tag.group(1):
            start, opened = tag.end(), -1
    kept.append(reply[start if opened < 0 else opened:])
    text = "".join(kept)
    # A stray closing tag means the server dropped the opening one: keep what follows.
    if "</think>" in text.lower():
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    return _OPEN_THINK.sub("", text)


def extract_action(reply: str) -> str | None:
    """The content of the *last* ``\\boxed{...}`` in ``reply`` (nested braces kept).

    Returns None when the reply holds no complete box: a format failure that the
    rollout counts, never a crash. Linear in the reply's length (braces are paired in one pass).

    >>> extract_action("<think>\\\\boxed{1}</think> so \\\\boxed{a} or \\\\boxed{f{x}}")
    'f{x}'
    """
    text = strip_thinking(reply)
    starts = [box.end() for box in _BOXED.finditer(text)]  # where each box's content starts
    if not starts:
        return None
    closes: dict[int, int] = {}  # the index of each brace "{" -> the "}" that closes it
    opened: list[int] = []
    for brace in _BRACE.finditer(text, starts[0] - 1):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closes[opened.pop()] = brace.start()
    for start in reversed(starts):
        if start - 1 in closes:
            return text[start:closes[start - 1]].strip()
    return None


_SIMPLE_BOXES = (re.compile(r"\\boxed\{([^{}]+)\}"), re.compile(r"\\boxed\{\{([^{}]+)\}\}"),
                 re.compile(r"\\boxed\{\{\{([^{}]+)\}\}\}"))


def reference_box(reply: str) -> str | None:
    """The action the SPADE reference reads from a reply: the *first* box (thinking removed).

    The reference looks for the first box whose content holds no braces (then for
    one in doubled or tripled braces); only when there is none does it take the
    last box with nested braces, unwrapping up to two outer brace pairs. None
    when the reply holds no box or only an empty one: the reference then hands
    the reply to ``step`` as it is.

    >>> reference_box("\\\\boxed{a} or \\\\boxed{b}")
    'a'
    """
    text = strip_thinking(reply)
    for pattern in _SIMPLE_BOXES:
        match = pattern.search(text)
        if match:
            return match.group(1).strip() or None
    at = text.rfind("\\boxed")
    start = text.find("{", at) if at >= 0 else -1
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            content = text[start + 1:i].strip()
            for _ in range(2):
                if content.startswith("{") and content.endswith("}"):
                    content = content[1:-1].strip()
            return content or None
    return None


def clip_reward(value: float) -> float:
    """Clamp a reward to [-1, 1]; NaN counts as 0 (the validator flags it separately)."""
    if value != value:  # NaN
        return 0.0
    return max(-REWARD_LIMIT, min(REWARD_LIMIT, float(value)))


def episode_return(last_reward: float, terminated: bool) -> float:
    """SPADE's return rule: the last reward, clipped, if the episode terminated; else 0."""
    return clip_reward(last_reward) if terminated else 0.0


#: Returns this close to the full reward count as a win (float noise in generated code).
_WIN_TOLERANCE = 1e-6


def is_success(ret: float, failure: str | None = None) -> bool:
    """A win is a clean episode (no failure) that earned the full reward: partial terminal credit is return,
    not success."""
    return failure is None and ret >= REWARD_LIMIT - _WIN_TOLERANCE


#: How an environment wants the agent's action delivered to ``step`` (see the module docstring).
PLAIN = "plain"
BOXED = "boxed"
TOOL_CALL = "tool_call"
ACTION_FORMATS = (PLAIN, BOXED, TOOL_CALL)


def deliver_action(action: str, action_format: str) -> str:
    """The action as ``step`` receives it: bare; wrapped in ``\\boxed{}`` for ``boxed`` files; and for
    ``tool_call`` files an answer goes in ``<answer></answer>`` unless the text already holds the tags."""
    if action_format == BOXED:
        return f"\\boxed{{{action}}}"
    if action_format == TOOL_CALL and "<answer>" not in action and "<tool_call>" not in action:
        return f"<answer>{action}</answer>"
    return action


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def answer_tag(reply: str) -> str | None:
    """The content of a reply's last ``<answer>...</answer>`` (thinking removed), or None.

    In a tool game a reply without a box may answer in the tags the reference's tool protocol uses;
    that content is then the action (``rollout.engine``, and ``reduce_action`` for solution items).
    """
    found = _ANSWER_TAG.findall(strip_thinking(reply))
    return found[-1].strip() if found else None


def reduce_action(text: str, tool_game: bool = False) -> str:
    """A scripted action (a ``solution()`` item) reduced as an agent's reply is: the last box's content;
    in a tool game (``tool_game``), failing a box, the last ``<answer>``'s.

    Text without either is kept (stripped): it is already an action.
    """
    boxed = extract_action(text) if _BOXED.search(text) else None
    if boxed is None and tool_game and "<tool_call>" not in text:
        boxed = answer_tag(text)
    return boxed if boxed is not None else text.strip()


#: The SPADE reference's conventions that spadegym supports, and how (tests/compat proves each, and
#: docs/reference-compatibility.md explains them). Files in the reference's conventions (action format
#: boxed or tool_call) get the reference's rules; spadegym's own (plain) files keep spadegym's.
REFERENCE_CONVENTIONS: dict[str, str] = {
    "boxed_action_delivery": "step() that parses \\boxed{} itself gets the action re-wrapped as \\boxed{action} "
                             "(detected from step's code, or declared with ACTION_FORMAT = 'boxed').",
    "first_box": "in a file in the reference's conventions the reply's first \\boxed{} is the action (the "
                 "reference's reading); spadegym's own files take the last.",
    "raw_replies": "in a file in the reference's conventions a reply without a box reaches step() as written "
                   "(games that read <answer> tags or free text); a step() that reads <answer> tags, or the "
                   "reference's file header, marks a file as one. spadegym's own files count it a format failure.",
    "boxed_solution_items": "solution() items holding \\boxed{x} are reduced to x before the gate replays them, "
                            "as an agent's reply is.",
    "prose_solution": "a solution() that returns text is played as one action, then as a sequence (lines, "
                      "numbered steps, commas, boxes; in a tool game its call notation name(arg=value) as tool "
                      "calls); if none wins in a boxed or tool_call file, feasibility is reported unverified "
                      "(a warning) and the hint arm judges it in a run (a plain file stays infeasible).",
    "menu_in_observation": "without valid_actions(), the gate and choice agents read the actions an observation "
                           "lists ('Available actions:' bullets, \\boxed{go north} examples).",
    "placeholder_menus": "a menu entry with a number placeholder (buy N, sell <amount>) stands for the numbers "
                         "the observation allows (its ranges, else the numbers it mentions).",
    "unverified_feasibility": "in a file in the reference's conventions where no probe knew a winning play or "
                              "every legal action (no playable solution(), no valid_actions(); a menu read from "
                              "the observation may be partial), a reward that never varied is 'feasibility "
                              "unverified' (a warning): random play that loses proves nothing. spadegym's own "
                              "files keep the strict rule.",
    "injected_names": "copy, operator, statistics, deepcopy, combinations, permutations, product, chain, "
                      "accumulate, reduce, lru_cache, heappush, heappop and the other stdlib names the reference "
                      "injects are defined without import.",
    "numpy": "np / numpy are provided (and 'import numpy' passes) when numpy is an allowed import "
             "(validation.allowed_imports, spadegym validate --allow-import numpy).",
    "math_verify": "'from math_verify import parse, verify' works: the math-verify package, installed with spadegym.",
    "tool_use_base_class": "ToolUseBaseEnv is provided without import (tools from self._tools, tool_<name> "
                           "methods, <answer> replies to step); <tool_call> replies go to execute_tool, several per "
                           "turn, the tool's output text is the observation, a boxed answer reaches step as "
                           "<answer>answer</answer>, and tool calls do not count toward the game's max_turns.",
    "tool_use_detection": "a file is a tool game when its class reaches ToolUseBaseEnv by any route (an alias, "
                          "tool_use_base_env.ToolUseBaseEnv, a base of its own), or lists tools (get_tools) and "
                          "reads <answer>/<tool_call> tags itself or carries the reference's header.",
    "xml_tool_calls": "tool calls in the Qwen3.5 XML form (<tool_call><function=name><parameter=key>value"
                      "</parameter></function></tool_call>) are read beside JSON ones.",
    "tool_base_details": "ToolUseBaseEnv's step answers a malformed reply with a format error and a -0.1 penalty, "
                         "and a wrong answer in a game of several instructions names the one still pending.",
    "tool_checks": "the gate checks what a tool game lets it: every listed tool callable with its declared "
                   "parameters (tool_<name> signatures), and the success criteria (_message_criteria over _state) "
                   "evaluable at reset (one that raises at every probed seed is refused).",
    "bool_rewards": "in a file in the reference's conventions a bool reward counts as float(reward); spadegym's "
                    "own files return a number.",
    "first_env_class": "in a file in the reference's conventions with several classes ending in Env, the first "
                       "is the environment (the reference's loader takes the first); spadegym's own files keep "
                       "exactly one.",
    "live_code_lints": "the static lints read only code that runs when the file is loaded (not a __main__ demo, "
                       "not TYPE_CHECKING imports), harmless standard modules (datetime, time, sys, ...) are "
                       "allowed, and so is eval() of the file's own strings: the sandbox is the security boundary. "
                       "eval() of the agent's action stays refused (the reply would run as code with the answer "
                       "in scope).",
    "tool_probes": "the gate plays a tool game through its tools: its probes call every listed tool with arguments "
                   "drawn from the schemas (valid values from the text seen so far, mistyped and missing ones, an "
                   "unknown tool), and such a game is degenerate only if no call changes anything; any schema "
                   "(..., sets, tuples, nesting) gives a verdict.",
    "base_class_names": "classes named Env, ToolUseBaseEnv or TerminalBaseEnv are never taken for the "
                        "environment class.",
    "max_turns_constructor": "the class is built with cls(); one whose __init__ requires max_turns gets "
                             "cls(max_turns=budget).",
    "pool_layout": "spadegym export --format spade writes game_{round:05d}_{index:03d}_{skill}.py files, "
                   "manifest.jsonl and checksums.sha256; spadegym validate/play/learn/run --pool read such "
                   "directories, nested ones included.",
    "spade_export": "spadegym export --format spade rewrites each file to load and win under the reference "
                    "(explicit imports for the names spadegym provides, an unboxing shim for plain files, tool "
                    "results as {'output': text}) or leaves it out with its reason, in the manifest and on the "
                    "terminal.",
}


def hint_line(hint: str) -> str:
    """The single line that carries a hint to an agent."""
    return HINT_PREFIX + " ".join(str(hint).split())


def with_hint(observation: str, hint: str | None) -> str:
    """Append the hint line to an observation (no-op without a hint)."""
    if not hint:
        return observation
    return f"{observation.rstrip()}\n{hint_line(hint)}"


def without_hint(observation: str) -> str:
    """The observation as the no-hint arm sees it: ``with_hint``'s line removed (if present)."""
    head, sep, last = observation.rpartition("\n")
    return head if sep and last.startswith(HINT_PREFIX) else observation


class ContractError(ValueError):
    """A value returned by an environment breaks the contract."""


@dataclass
class ResetResult:
    observation: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


class OptionalMethods:
    """What an environment offers beyond ``reset``/``step``; ``methods`` names the optional methods its class defines."""

    methods: Collection[str]

    @property
    def has_solution(self) -> bool:
        return "solution" in self.methods

    @property
    def has_valid_actions(self) -> bool:
        return "valid_actions" in self.methods

    @property
    def has_hint(self) -> bool:
        return "hint" in self.methods

    @property
    def has_tools(self) -> bool:
        return "get_tools" in self.methods


def _as_bool(value: Any, what: str) -> bool:
    # numpy bools and 0/1 ints are common in generated code; anything else is a bug.
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    if type(value).__name__ == "bool_":
        return bool(value)
    raise ContractError(f"{what} must be a bool, got {type(value).__name__} {value!r:.60}")


def _as_info(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ContractError(f"info must be a dict, got {type(value).__name__}")
    return value


def normalize_reset(result: Any) -> ResetResult:
    """Read what ``reset`` returned: ``(str, dict)`` or a bare ``str``."""
    if isinstance(result, str):
        return ResetResult(result, {})
    if isinstance(result, tuple) and len(result) == 2:
        obs, info = result
        if not isinstance(obs, str):
            raise ContractError(f"reset() observation must be a str, got {type(obs).__name__}")
        return ResetResult(obs, _as_info(info))
    raise ContractError(
        f"reset() must return (observation: str, info: dict) or a str, got {type(result).__name__}"
        + (f" of length {len(result)}" if isinstance(result, tuple) else "")
    )


def normalize_step(result: Any, bool_reward: bool = False) -> StepResult:
    """Read what ``step`` returned: the 5-tuple, or the old 4-tuple with ``done``.

    ``bool_reward``: a ``bool`` reward counts as 1.0 or 0.0 (the reference's ``float(reward)``,
    for files in its conventions); spadegym's own files return a number.
    """
    if not isinstance(result, tuple) or len(result) not in (4, 5):
        size = f" of length {len(result)}" if isinstance(result, tuple) else ""
        raise ContractError(
            "step() must return (observation, reward, terminated, truncated, info), "
            f"got {type(result).__name__}{size}"
        )
    if len(result) == 4:
        obs, reward, done, info = result
        terminated, truncated = done, False
    else:
        obs, reward, terminated, truncated, info = result
    if not isinstance(obs, str):
        raise ContractError(f"step() observation must be a str, got {type(obs).__name__}")
    if isinstance(reward, bool) or type(reward).__name__ == "bool_":
        if not bool_reward:
            raise ContractError(f"step() reward must be a number, got bool {reward}: return 1.0 or 0.0")
        reward = float(reward)
    elif not isinstance(reward, (int, float)):
        if type(reward).__name__.startswith(("float", "int")):  # numpy scalars
            reward = float(reward)
        else:
            raise ContractError(f"step() reward must be a number, got {type(reward).__name__}")
    reward = float(reward)
    if not math.isfinite(reward):
        raise ContractError(f"step() reward must be finite, got {reward}")
    return StepResult(
        obs,
        reward,
        _as_bool(terminated, "step() terminated"),
        _as_bool(truncated, "step() truncated"),
        _as_info(info),
    )


@dataclass(frozen=True)
class ToolCall:
    """A tool call read from an agent's action: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


_TOOL_CALL_KEYS = frozenset({"name", "arguments"})
#: Nesting a tool call's arguments may have: deeper ones are no call (copying and storing them would recurse).
TOOL_ARGUMENT_DEPTH = 16


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} cannot be sent to a worker")  # NaN and infinities are not JSON


def _shallow(value: Any, limit: int) -> bool:
    """Whether lists and dicts in ``value`` nest at most ``limit`` deep (iterative)."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        level = [v for item in level if isinstance(item, (list, dict))
                 for v in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return True
    return False


def parse_tool_call(action: str | None) -> ToolCall | None:
    """The tool call an action holds, or None when it is an ordinary action.

    A tool call is a JSON object with a non-empty string ``name`` and optionally
    ``arguments``: an object, or (OpenAI's wire form) a string holding one.
    Other keys make it an ordinary action, so a JSON final answer such as
    ``{"name": "Ada", "age": 36}`` still reaches ``step``.

    >>> parse_tool_call('{"name": "add", "arguments": {"a": 1}}')
    ToolCall(name='add', arguments={'a': 1})
    >>> parse_tool_call("42") is None
    True
    """
    if not action or not action.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(action, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not data.keys() <= _TOOL_CALL_KEYS:
        return None
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    arguments = data.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments, parse_constant=_no_constant) if arguments.strip() else None
        except (ValueError, RecursionError):
            return None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not _shallow(arguments, TOOL_ARGUMENT_DEPTH):
        return None
    return ToolCall(name.strip(), arguments)


def tool_name(schema: dict[str, Any]) -> str | None:
    """The tool a schema describes: ``schema["name"]`` or OpenAI's ``schema["function"]["name"]``."""
    name = schema.get("name")
    function = schema.get("function")
    if name is None and isinstance(function, dict):
        name = function.get("name")
    return name if isinstance(name, str) and name.strip() else None


def normalize_tools(result: Any) -> list[dict[str, Any]]:
    """Read what ``get_tools`` returned: a list of dicts, each naming its tool (JSON-safe copies)."""
    if not isinstance(result, (list, tuple)):
        raise ContractError(f"get_tools() must return a list of tool schemas (dicts), got {type(result).__name__}")
    for i, schema in enumerate(result):
        if not isinstance(schema, dict):
            raise ContractError(f"get_tools() item {i} must be a dict (a tool schema), got {type(schema).__name__}")
        if tool_name(schema) is None:
            raise ContractError(f"get_tools() item {i} names no tool: give it a string 'name' "
                                "(or 'function': {'name': ...})")
    try:
        return json.loads(json.dumps(list(result), default=repr, allow_nan=False))
    except (ValueError, TypeError, RecursionError) as exc:
        raise ContractError(f"get_tools() returned schemas that are not JSON data ({exc})") from None


_TOOL_OUTPUT_KEYS = frozenset({"output", "returncode"})


def normalize_tool_result(result: Any, bool_reward: bool = False) -> StepResult:
    """Read what ``execute_tool`` returned: the ``step`` tuple, or a tool result (reward 0, not ending).

    A tuple of 4 or 5 items whose first item is a string is read as the ``step``
    tuple (and must then follow its rules); any other value is a tool result:
    its text when it is the reference's ``{"output": text, "returncode": n}``,
    else the value as JSON.
    """
    if isinstance(result, tuple) and len(result) in (4, 5) and isinstance(result[0], str):
        try:
            return normalize_step(result, bool_reward)
        except ContractError as exc:
            raise ContractError(str(exc).replace("step()", "execute_tool()")) from None
    if isinstance(result, str):
        return StepResult(result, 0.0, False, False, {})
    if isinstance(result, dict) and isinstance(result.get("output"), str) and result.keys() <= _TOOL_OUTPUT_KEYS:
        return StepResult(result["output"], 0.0, False, False, {})  # the reference's {"output", "returncode"}
    try:
        text = json.dumps(result, default=repr, allow_nan=False, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ContractError(f"execute_tool() returned a value that cannot be shown as JSON ({exc})") from None
    return StepResult(text, 0.0, False, False, {})
