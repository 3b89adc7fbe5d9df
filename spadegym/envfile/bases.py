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


class ToolUseBaseEnv:
    """Tools from ``self._tools``, calls to ``tool_<name>`` methods, ``<answer>`` replies to ``step``.

    ``execute_tool`` answers ``{"output": text, "returncode": 0 or 1}``; the
    runtime shows the agent the output text. ``step`` counts answer turns
    against ``max_turns`` (tool calls do not count) and pays 1.0 for the
    expected answer (``_check_answer``: case-insensitive, or numbers within 0.01).
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
        """An ``<answer>`` is judged; a ``<tool_call>`` in the text still runs; anything else is a format error."""
        self.turn_count += 1
        out_of_turns = self.turn_count >= self.max_turns
        answer = _ANSWER.search(action)
        if answer:
            if self._check_answer(answer.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            if out_of_turns:
                return f"Wrong answer. Solution:\n{self.solution()}", 0.0, False, True, {}
            return "Incorrect. Keep using tools.", 0.0, False, False, {}
        call = _TOOL_CALL.search(action)
        if call:
            try:
                data = json.loads(call.group(1))
                name, arguments = str(data.get("name", "")), data.get("arguments") or {}
            except (ValueError, AttributeError):
                name, arguments = "", {}
            _ok, output = self._call(name, arguments if isinstance(arguments, dict) else {})
            observation = f"Tool result:\n{output}"
        else:
            observation = "Format error: call a tool, or submit <answer>result</answer>."
        if out_of_turns:
            return f"{observation}\n\nTime up. Solution:\n{self.solution()}", 0.0, False, True, {}
        return observation, (0.0 if call else -0.1), False, False, {}

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
