"""The scripted agent: replays a fixed list of actions (tests, reproducing a failure).

The file holds one entry per line (blank lines and lines starting with ``#``
are skipped) or a JSON list of strings. An entry is a bare action (``north``),
or a whole reply when it contains ``\\boxed{`` (``I go \\boxed{north}``): the
action is then extracted by the one contract rule. With ``replies=True`` every
entry is a whole reply, box or not, so a recorded LLM conversation (format
failures and replies the reference hands to ``step`` as written included)
replays exactly.

Every episode replays the list from its first entry. When an episode needs
more actions than the file holds, the reply is an agent error naming the file:
the episode ends as an ``agent`` failure (never scored as a loss) rather than
silently repeating an action the script's author did not write.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..envfile import extract_action
from .base import Reply, View


class ScriptError(ValueError):
    """The script file cannot be read (missing, empty, not a list of strings)."""


def read_script(path: str | Path) -> list[str]:
    """The entries of a script file, in order."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read the action script {path} ({exc.strerror or exc}); "
                          "give a file with one action per line.") from None
    if text.lstrip().startswith("["):
        try:
            entries = json.loads(text)
        except ValueError as exc:
            raise ScriptError(f"the action script {path} starts with '[' but is not valid JSON ({exc}).") from None
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise ScriptError(f"the action script {path} must be a JSON list of strings.")
    else:
        entries = [line.strip() for line in text.splitlines()]
        entries = [e for e in entries if e and not e.startswith("#")]
    if not entries:
        raise ScriptError(f"the action script {path} holds no actions; write one action per line.")
    return entries


class ScriptedAgent:
    """Replays the same entries in every episode."""

    keeps_history = False
    needs_valid_actions = False
    lockstep = True

    def __init__(self, entries: list[str], source: str = "<script>", replies: bool = False):
        if not entries:
            raise ScriptError(f"the action script {source} holds no actions.")
        self.entries = list(entries)
        self.replies = replies
        self.source = source
        self.name = f"scripted:{source}"
        self._position: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedAgent:
        return cls(read_script(path), str(path))

    def reply_for(self, view: View) -> Reply:
        index = self._position.get(view.episode_key, 0)
        self._position[view.episode_key] = index + 1
        if index >= len(self.entries):
            return Reply(text="", action=None, error=(
                f"the action script {self.source} has no action left for turn {index + 1} "
                f"(it lists {len(self.entries)}); add actions to the file."))
        entry = self.entries[index]
        if self.replies or "\\boxed" in entry:
            return Reply(text=entry, action=extract_action(entry))
        return Reply(text=f"\\boxed{{{entry}}}", action=entry)

    async def act(self, views: list[View]) -> list[Reply]:
        return [self.reply_for(view) for view in views]

    def end_episodes(self, keys: list[str]) -> None:
        for key in keys:
            self._position.pop(key, None)

    async def aclose(self) -> None:
        return None
