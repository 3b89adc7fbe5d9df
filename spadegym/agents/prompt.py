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

#: Valid-action lists longer than this are cut (the model still sees how many there are).
MAX_LISTED_ACTIONS = 60


def system_message(view: View, base: str = SYSTEM_PROMPT) -> dict[str, str]:
    """The system message of an episode (the tools schema is added for tool-use games)."""
    text = base
    if view.tools:
        text += TOOLS_PROMPT.format(schema=json.dumps(view.tools, indent=1, default=str))
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


def assistant_message(content: str) -> dict[str, Any]:
    """A past reply as it goes back into the conversation (reasoning already removed)."""
    return {"role": "assistant", "content": content}
