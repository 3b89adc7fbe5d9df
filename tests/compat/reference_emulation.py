"""The SPADE reference's loader and rollout, emulated: a game that loads and wins here does so there.

Written from reading the reference's code (spade-rl/spade: ``spade/core/envs/synthetic_game_env.py``,
``spade/core/envs/tool_use_base_env.py``, ``spade/core/utils/parsing.py``, ``tool_call_parser.py``,
``rewards.py`` and the game loops of ``spade/core/orchestrator.py``); none of its code is copied. It
never imports spadegym, and runs as its own process (it executes the games, as the reference does):

    python reference_emulation.py PLAYS.json   # [{"path", "seed", "replies"}] -> one JSON line per play

What it reproduces, each a fact of the reference:

- loading: the code runs as module ``dynamic_game`` with the reference's injected names (set only
  where the file does not bind them) and ``ToolUseBaseEnv`` (also importable as ``tool_use_base_env``);
  the game class is the first module name ending in ``Env`` (``Env`` and ``ToolUseBaseEnv`` aside);
  it is built with ``cls()`` (``cls(max_turns=budget)`` if that raises ``TypeError``) and its
  ``max_turns`` capped at the budget; then the load check: ``reset(seed=42)`` returns a non-empty
  text observation (and a dict info), ``step`` of ``\\boxed{1}``, ``\\boxed{test}``, ``\\boxed{42}``
  returns exactly a 5-tuple of str, int/float in [-10, 10], bool, bool, dict (until the episode
  ends), and ``reset(seed=123)`` runs;
- playing: a game whose ``get_tools()`` returns tools takes the tool-use loop (a reply with an
  ``<answer>`` goes to ``step`` whole; else its ``<tool_call>`` blocks, XML or JSON, go to
  ``execute_tool`` and each result's ``["output"]`` is read; else the reply goes to ``step``
  whole); any other game gets ``\\boxed{x}`` for the reply's first box (else the reply itself);
  ``step`` errors end the episode with reward -1; the return is the last reward, clipped to
  [-1, 1], when the episode terminated, else 0; the loop stops after ``budget`` replies.
"""

from __future__ import annotations

import collections
import copy
import functools
import heapq
import html
import itertools
import json
import math
import operator
import random
import re
import statistics
import string
import sys
import types
import typing
from pathlib import Path

BUDGET = 25  # the reference's default max_turns


def injected_names() -> dict[str, object]:
    """The names the reference's loader puts into every game's namespace."""
    names: dict[str, object] = {m.__name__: m for m in (itertools, math, random, re, json, collections, functools,
                                                         string, copy, heapq, operator, statistics)}
    try:
        import numpy
        names.update(np=numpy, numpy=numpy)
    except ImportError:
        pass
    names.update({n: getattr(collections, n) for n in ("deque", "defaultdict", "Counter", "OrderedDict",
                                                       "namedtuple")})
    names.update({n: getattr(itertools, n) for n in ("combinations", "permutations", "product", "chain",
                                                     "accumulate")})
    names.update(reduce=functools.reduce, lru_cache=functools.lru_cache, deepcopy=copy.deepcopy,
                 heappush=heapq.heappush, heappop=heapq.heappop)
    names.update({n: getattr(typing, n) for n in ("Tuple", "Dict", "List", "Optional", "Union", "Any", "Set",
                                                  "FrozenSet", "Callable", "Iterable", "Sequence", "Mapping")})
    return names


class ToolUseBaseEnv:
    """The reference's tool-use base class, as it behaves."""

    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools, self._state, self._call_history, self._expected_answer = {}, {}, [], None
        self.reset()

    def reset(self, seed=None):
        raise NotImplementedError

    def solution(self):
        raise NotImplementedError

    def get_tools(self):
        return [{"type": "function", "function": {"name": name, "description": spec.get("description", ""),
                                                  "parameters": spec.get("parameters", {"type": "object",
                                                                                        "properties": {}})}}
                for name, spec in self._tools.items()]

    def execute_tool(self, name, arguments):
        method = getattr(self, f"tool_{name}", None)
        if method is None:
            return {"output": f"Unknown tool '{name}'", "returncode": 1}
        try:
            result = method(**arguments)
        except Exception as exc:
            return {"output": f"Error calling {name}: {exc}", "returncode": 1}
        self._call_history.append({"name": name, "arguments": arguments, "result": str(result)})
        return {"output": str(result), "returncode": 0}

    def step(self, action):
        self.turn_count += 1
        last = self.turn_count >= self.max_turns
        answer = re.search(r"<answer>(.*?)</answer>", action, re.DOTALL)
        if answer:
            if self._check_answer(answer.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            return ("Wrong answer.", 0.0, False, True, {}) if last else ("Incorrect.", 0.0, False, False, {})
        block = re.search(r"<tool_call>(.*?)</tool_call>", action, re.DOTALL)
        try:
            call = json.loads(block.group(1)) if block else None
            name, arguments = (call.get("name", ""), call.get("arguments", {})) if call is not None else ("", {})
        except (ValueError, AttributeError):
            call = None
        if call is None:
            return ("Time up.", 0.0, False, True, {}) if last else ("Format error.", -0.1, False, False, {})
        method = getattr(self, f"tool_{name}", None)
        if method is None:
            return ("Time up.", 0.0, False, True, {}) if last else ("Unknown tool.", 0.0, False, False, {})
        try:
            result = method(**(arguments if isinstance(arguments, dict) else {}))
        except Exception as exc:
            result = f"Error calling {name}: {exc}"
        return (f"Tool result:\n{result}", 0.0, False, last, {})

    def _check_answer(self, answer):
        given, expected = str(answer).strip(), str(self._expected_answer).strip()
        if given.lower() == expected.lower():
            return True
        try:
            return abs(float(given.replace("$", "").replace(",", "")) - float(expected.replace("$", "")
                                                                              .replace(",", ""))) < 0.01
        except (TypeError, ValueError):
            return False

    def _obs_suffix(self):
        return ""

    def close(self):
        pass


def load(code: str, budget: int = BUDGET):
    """The reference's loader and load check; the game instance, or an exception saying why not."""
    module = types.ModuleType("dynamic_game")
    sys.modules["dynamic_game"] = module
    for name, value in injected_names().items():
        module.__dict__.setdefault(name, value)
    base = types.ModuleType("tool_use_base_env")
    base.ToolUseBaseEnv = ToolUseBaseEnv
    module.__dict__["ToolUseBaseEnv"] = ToolUseBaseEnv
    sys.modules["tool_use_base_env"] = base
    exec(compile(code, "dynamic_game", "exec"), module.__dict__)  # noqa: S102 - the reference does the same
    cls = next((value for name, value in module.__dict__.items()
                if name.endswith("Env") and name not in ("Env", "ToolUseBaseEnv") and callable(value)), None)
    if cls is None:
        raise ValueError("no class ending in Env")
    try:
        game = cls()
    except TypeError:
        game = cls(max_turns=budget)
    designed = getattr(game, "max_turns", None)
    if isinstance(designed, int) and designed > 0:
        game.max_turns = min(designed, budget)
    elif hasattr(game, "max_turns"):
        game.max_turns = budget
    for method in ("reset", "step"):
        if not hasattr(game, method):
            raise ValueError(f"no {method}()")
    first = game.reset(seed=42)
    observation, info = (first, {}) if isinstance(first, str) else first
    if not isinstance(observation, str) or not observation or not isinstance(info, dict):
        raise ValueError("reset() must return a non-empty text observation and a dict")
    for action in ("\\boxed{1}", "\\boxed{test}", "\\boxed{42}"):
        result = game.step(action)
        if not isinstance(result, tuple) or len(result) != 5:
            raise ValueError(f"step({action!r}) must return a 5-tuple")
        obs, reward, terminated, truncated, info = result
        if not (isinstance(obs, str) and isinstance(reward, (int, float)) and isinstance(terminated, bool)
                and isinstance(truncated, bool) and isinstance(info, dict)):
            raise ValueError(f"step({action!r}) returned the wrong types")
        if not -10 <= reward <= 10:
            raise ValueError(f"step({action!r}) reward {reward} is outside [-10, 10]")
        if terminated or truncated:
            break
    game.reset(seed=123)
    return game


def first_box(reply: str) -> str | None:
    """The reference's reading of a reply's box."""
    for pattern in (r"\\boxed\{([^{}]+)\}", r"\\boxed\{\{([^{}]+)\}\}", r"\\boxed\{\{\{([^{}]+)\}\}\}"):
        found = re.search(pattern, reply)
        if found:
            return found.group(1).strip()
    at = reply.rfind("\\boxed")
    start = reply.find("{", at) if at >= 0 else -1
    depth = 0
    for i in range(max(start, 0), len(reply) if start >= 0 else 0):
        depth += {"{": 1, "}": -1}.get(reply[i], 0)
        if depth == 0:
            content = reply[start + 1:i].strip()
            for _ in range(2):
                if content.startswith("{") and content.endswith("}"):
                    content = content[1:-1].strip()
            return content
    return None


def tool_calls(reply: str) -> list[tuple[str, dict]]:
    """The ``<tool_call>`` blocks of a reply, the XML form tried before JSON."""
    calls = []
    for block in re.findall(r"<tool_call>(.*?)</tool_call>", reply, re.DOTALL):
        function = re.search(r"<function=(\w+)>(.*?)</function>", block, re.DOTALL)
        if function:
            arguments = {}
            for key, value in re.findall(r"<parameter=(\w+)>(.*?)</parameter>", function.group(2), re.DOTALL):
                value = html.unescape(value.strip())
                try:
                    arguments[key] = json.loads(value)
                except ValueError:
                    arguments[key] = value
            calls.append((function.group(1), arguments))
            continue
        try:
            data = json.loads(block.strip())
        except ValueError:
            continue
        if isinstance(data, dict) and "name" in data:
            arguments = data.get("arguments", data.get("parameters", {}))
            calls.append((data["name"], json.loads(arguments) if isinstance(arguments, str) else arguments))
    return calls


def wrapped_step(game, action: str):
    """The reference's environment wrapper around ``step``: errors end the episode with -1."""
    try:
        result = game.step(action)
    except Exception as exc:
        return f"Error: {exc}", -1.0, True, False
    if not (isinstance(result, tuple) and len(result) == 5):
        return "Invalid game response", -1.0, True, False
    obs, reward, terminated, truncated, _info = result
    return str(obs), float(reward), bool(terminated), bool(truncated)


def play(game, seed: int, replies: list[str], budget: int = BUDGET) -> dict:
    """The reference's game loop (or tool-use loop) over scripted replies; the episode's return."""
    game.reset(seed=seed)
    tools = game.get_tools() if hasattr(game, "get_tools") else []
    rewards, terminated, truncated, turns = [], False, False, 0
    for reply in replies[:budget]:
        turns += 1
        if tools and "<answer>" not in reply and tool_calls(reply):
            try:
                for name, arguments in tool_calls(reply):
                    game.execute_tool(name, arguments).get("output", "")
            except Exception as exc:  # a result without .get (not a dict) fails the whole episode
                return {"return": 0.0, "terminated": False, "turns": turns, "tools": True,
                        "failed": f"{type(exc).__name__}: {exc}"}
            rewards.append(0.0)
            continue
        if tools:
            _obs, reward, terminated, truncated = wrapped_step(game, reply)
        else:
            box = first_box(reply)
            _obs, reward, terminated, truncated = wrapped_step(game, f"\\boxed{{{box}}}" if box else reply.strip())
        rewards.append(reward)
        if terminated or truncated:
            break
    ret = max(-1.0, min(1.0, rewards[-1])) if rewards and terminated else 0.0
    return {"return": ret, "terminated": terminated, "turns": turns, "tools": bool(tools)}


def main(path: str) -> None:
    for item in json.loads(Path(path).read_text()):
        try:
            game = load(Path(item["path"]).read_text())
            outcome = {"loaded": True, "class": type(game).__name__,
                       **play(game, item["seed"], item["replies"])}
        except Exception as exc:  # the reference fails the game: say how
            outcome = {"loaded": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps({"path": item["path"], **outcome}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
