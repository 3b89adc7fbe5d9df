"""Base classes the runtime provides to environment files, as the SPADE reference does.

The reference's tool-use environments subclass ``ToolUseBaseEnv`` without
importing it. This is spadegym's own class with the behaviour such files rely
on: a subclass writes ``reset`` (setting ``self._tools``, ``self._state`` and
``self._expected_answer``), one ``tool_<name>`` method per tool and a text
``solution()``; the base lists the tools, routes calls to the methods, and
judges ``<answer>...</answer>`` replies in ``step``. Only the sandbox worker
puts it into an environment's namespace.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
#: The reward of a reply that is neither an answer nor a well-formed tool call (the reference's format penalty).
_FORMAT_PENALTY = -0.1


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


class ToolUseBaseEnv:
    """Tools from ``self._tools``, calls to ``tool_<name>`` methods, ``<answer>`` replies to ``step``.

    ``execute_tool`` answers ``{"output": text, "returncode": 0 or 1}``; the
    runtime shows the agent the output text. ``step`` counts answer turns
    against ``max_turns`` (tool calls do not count) and pays 1.0 for the
    expected answer (``_check_answer``: case-insensitive, or numbers within 0.01);
    a wrong answer names the instruction still pending in a game of several,
    and a malformed reply is a format error with a -0.1 penalty.
    """

    def __init__(self, max_turns: int = 10, **kwargs: Any):
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools: dict[str, dict[str, Any]] = {}
        self._state: dict[str, Any] = {}
        self._call_history: list[dict[str, Any]] = []
        self._expected_answer: Any = None
        self.reset()

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        raise NotImplementedError("a ToolUseBaseEnv subclass defines reset(seed)")

    def solution(self) -> str:
        raise NotImplementedError("a ToolUseBaseEnv subclass defines solution()")

    def get_tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas built from ``self._tools``."""
        return [{"type": "function", "function": {
            "name": name, "description": spec.get("description", ""),
            "parameters": spec.get("parameters", {"type": "object", "properties": {}})}}
            for name, spec in self._tools.items()]

    def _call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        method = getattr(self, f"tool_{name}", None)
        if not callable(method):
            return False, f"Unknown tool '{name}'. Available: {', '.join(self._tools)}"
        try:
            result = method(**arguments)
        except Exception as exc:  # noqa: BLE001 - a bad call is the agent's error, shown as the result
            return False, f"Error calling {name}: {exc}"
        self._call_history.append({"name": name, "arguments": arguments, "result": str(result)})
        return True, str(result)

    def execute_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        ok, output = self._call(name, arguments if isinstance(arguments, dict) else {})
        return {"output": output, "returncode": 0 if ok else 1}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """An ``<answer>`` is judged; a JSON ``<tool_call>`` in the text still runs; anything else, or a
        tool call that is not JSON, is a format error (reward -0.1). Every call counts toward ``max_turns``;
        the last one that does not win shows the solution and truncates the episode."""
        self.turn_count += 1
        out_of_turns = self.turn_count >= self.max_turns
        answer = _ANSWER.search(action)
        if answer:
            if self._check_answer(answer.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            if out_of_turns:
                return f"Wrong answer. Solution:\n{self.solution()}", 0.0, False, True, {}
            return self._incorrect_answer_feedback(), 0.0, False, False, {}
        call = _TOOL_CALL.search(action)
        data = _json_object(call.group(1)) if call else None
        if data is None or (call and not isinstance(data.get("name", ""), str)):
            if out_of_turns:
                return f"Time up. Solution:\n{self.solution()}", 0.0, False, True, {}
            feedback = ("Format error: the tool call is not a JSON object {\"name\": ..., \"arguments\": {...}}."
                        if call else "Format error: call a tool, or submit <answer>result</answer>.")
            return feedback, _FORMAT_PENALTY, False, False, {}
        name, arguments = data.get("name", ""), data.get("arguments")
        if not callable(getattr(self, f"tool_{name}", None)):
            if out_of_turns:
                return f"Time up. Solution:\n{self.solution()}", 0.0, False, True, {}
            return f"Unknown tool '{name}'. Available: {', '.join(self._tools)}", 0.0, False, False, {}
        _ok, output = self._call(name, arguments if isinstance(arguments, dict) else {})
        observation = f"Tool result:\n{output}"
        if out_of_turns:
            return f"{observation}\n\nTime up. Solution:\n{self.solution()}", 0.0, False, True, {}
        return observation, 0.0, False, False, {}

    def _incorrect_answer_feedback(self) -> str:
        """What a wrong answer hears: in a game of several instructions (``_user_messages`` and the index
        ``_current_msg``), the instruction still pending, so the agent acts on it instead of answering again."""
        messages, current = getattr(self, "_user_messages", None), getattr(self, "_current_msg", None)
        if isinstance(messages, (list, tuple)) and isinstance(current, int) and 0 <= current < len(messages):
            return (f"Incorrect. Keep using tools. Step {current + 1} of {len(messages)} is not done yet: "
                    f"\"{messages[current]}\" Complete it with the tools before you submit <answer>done</answer>.")
        return "Incorrect. Keep using tools."

    def _check_answer(self, answer: str) -> bool:
        given, expected = str(answer).strip(), str(self._expected_answer).strip()
        if given.lower() == expected.lower():
            return True
        try:
            clean = [float(x.replace("$", "").replace(",", "")) for x in (given, expected)]
        except ValueError:
            return False
        return abs(clean[0] - clean[1]) < 0.01

    def _obs_suffix(self) -> str:
        """Kept for files that append it to observations: tools are shown by the runtime instead."""
        return ""

    def close(self) -> None:
        return None


#: The classes the runtime provides, by the name environment files use.
PROVIDED_CLASSES: dict[str, type] = {"ToolUseBaseEnv": ToolUseBaseEnv}


def provided_methods(name: str) -> set[str]:
    """Methods a provided base class defines (for the static checks, which never import env code)."""
    cls = PROVIDED_CLASSES.get(name)
    return {m for m in vars(cls) if callable(vars(cls)[m]) and not m.startswith("__")} if cls else set()
