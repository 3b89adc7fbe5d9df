"""The gameplay prompt: how an observation becomes chat messages for an LLM agent.

One place for the wording, so the hint arm and the no-hint arm, the CLI and
the self-play loop all ask the model the same way. The hint is not mentioned
here: it arrives inside the observation as its ``hint: <text>`` line.
"""

from __future__ import annotations

import json
from typing import Any

from .base import View

SYSTEM_PROMPT = (
    "You are playing a text-based game. Each user message is what the game shows you now.\n"
    "Reason step by step about the state of the game and what to do next. Then end your reply "
    "with exactly one action inside \\boxed{}, for example \\boxed{north}. Only the content of "
    "the last \\boxed{} in your reply is sent to the game, so put the action and nothing else in it."
)

TOOLS_PROMPT = (
    "\n\nThis game is played with tools. The tools you can call, as JSON schemas:\n{schema}\n"
    "To call a tool, put one JSON object {{\"name\": ..., \"arguments\": {{...}}}} inside \\boxed{{}}."
)

NATIVE_TOOLS_PROMPT = (
    "\n\nThis game is played with tools: call them with tool calls (or write "
    "<tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>). When you know the answer, give it "
    "inside \\boxed{}."
)

#: Valid-action lists longer than this are cut (the model still sees how many there are).
MAX_LISTED_ACTIONS = 60


def system_message(view: View, base: str = SYSTEM_PROMPT, native_tools: bool = False) -> dict[str, str]:
    """The system message of an episode. In a tool-use game: how to call the tools, and their schemas
    unless they travel natively (``native_tools``: the API's ``tools``, or the chat template's)."""
    text = base
    if view.tools:
        text += NATIVE_TOOLS_PROMPT if native_tools else TOOLS_PROMPT.format(
            schema=json.dumps(view.tools, indent=1, default=str))
    return {"role": "system", "content": text}


def user_message(view: View) -> dict[str, str]:
    """One turn's observation, followed by the turn count and the valid actions when known."""
    parts = [view.observation.rstrip()]
    notes = []
    if view.max_turns:
        notes.append(f"Turn {view.turn + 1} of {view.max_turns}.")
    if view.valid_actions:
        shown = view.valid_actions[:MAX_LISTED_ACTIONS]
        more = len(view.valid_actions) - len(shown)
        listed = ", ".join(shown) + (f", ... ({more} more)" if more > 0 else "")
        notes.append(f"Valid actions: {listed}.")
    if notes:
        parts.append(" ".join(notes))
    return {"role": "user", "content": "\n\n".join(parts)}


def assistant_message(content: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A past reply as it goes back into the conversation (reasoning already removed), with its native
    tool calls (``tool_protocol.history_calls``) when it made any."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_messages(view: View, call_ids: list[str]) -> list[dict[str, Any]]:
    """The observation after native tool calls, as one ``tool`` message per call: each its own output when
    the observation holds one per call (the runtime joins them with a blank line), else the whole
    observation answers the first and the others point to it."""
    content = user_message(view)["content"]
    parts = view.observation.split("\n\n")
    if len(call_ids) > 1 and len(parts) == len(call_ids):
        return [{"role": "tool", "tool_call_id": i, "content": part} for i, part in zip(call_ids, parts)]
    return [{"role": "tool", "tool_call_id": i, "content": content if n == 0 else "(output above)"}
            for n, i in enumerate(call_ids)]
