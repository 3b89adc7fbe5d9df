"""Tools between a level and a chat model: the API's ``tools`` out, native tool calls back in as actions.

A level lists its tools as schemas (``View.tools``: OpenAI's nested form, or a
flat ``{"name", "parameters"}``). ``api_tools`` gives them in the form chat APIs
and chat templates take (``tools=``). A model's native tool calls come back as
the reference's text protocol (``<tool_call>{json}</tool_call>`` blocks,
``calls_text``), so one reply reads the same whether the model called a tool
natively or wrote the call: the rollout's rules (``rollout.engine``) then send
every call of a reference tool game to ``execute_tool`` in one turn, and the
first call of a spadegym tool game (``call_action``: one action per turn).
"""

from __future__ import annotations

import json
from typing import Any


def api_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each listed tool as ``{"type": "function", "function": {"name", "description", "parameters"}}``;
    a schema without a name is left out."""
    out = []
    for schema in tools or []:
        function = schema.get("function") if isinstance(schema.get("function"), dict) else schema
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        parameters = function.get("parameters")
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name.strip(),
                    "description": str(function.get("description") or ""),
                    "parameters": parameters
                    if isinstance(parameters, dict)
                    else {"type": "object", "properties": {}},
                },
            }
        )
    return out


def _arguments(text: str) -> Any:
    """A native call's arguments text as JSON (kept as text when it is not JSON: the call is then malformed)."""
    try:
        return json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return text


def call_json(call: dict[str, Any]) -> str:
    """One native call (``{"name", "arguments": JSON text}``) as the contract's JSON tool-call action."""
    return json.dumps({"name": call["name"], "arguments": _arguments(call["arguments"])}, ensure_ascii=False)


def calls_text(calls: list[dict[str, Any]]) -> str:
    """Native calls written in the reference's text protocol, one ``<tool_call>`` block each."""
    return "\n".join(f"<tool_call>{call_json(call)}</tool_call>" for call in calls)


def call_action(calls: list[dict[str, Any]]) -> str | None:
    """The action a reply's native calls make in a spadegym tool game: the first call (one per turn)."""
    return call_json(calls[0]) if calls else None


def history_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Native calls as they go back into the conversation (``assistant.tool_calls``)."""
    return [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls
    ]
