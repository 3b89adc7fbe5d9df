"""The human agent: plays from the terminal.

It prints each observation and the valid actions (numbered), and reads one
line: a number picks that valid action, anything else is the action itself (a
line containing ``\\boxed{}`` is read like a model's reply). In a tool-use
game the tools are listed at the first turn; a line ``{"name": ..., "arguments":
{...}}`` calls one. End of input
(Ctrl-D) raises ``PlayerQuit`` so the caller stops cleanly.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.columns import Columns
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from ..envfile import extract_action, tool_name
from .base import Reply, View

#: Menus longer than this are printed in columns rather than one action a line.
LONG_MENU = 12


class PlayerQuit(Exception):
    """The player closed the input (Ctrl-D / end of file)."""


class HumanAgent:
    """One line of input per turn; episodes are asked one after the other."""

    name = "human"
    keeps_history = True  # the player sees the whole conversation scroll by
    needs_valid_actions = False
    lockstep = True

    def __init__(self, input_stream: TextIO | None = None, console: Console | None = None):
        self.input = input_stream or sys.stdin
        # Prompts go to stderr, so `play --json` keeps stdout machine-readable.
        self.console = console or Console(stderr=True, highlight=False)

    def show(self, view: View) -> None:
        budget = f"/{view.max_turns}" if view.max_turns else ""
        self.console.rule(f"turn {view.turn + 1}{budget}")
        if view.tools and view.turn == 0:
            self.console.print('tools (call one with {"name": ..., "arguments": {...}}):')
            for schema in view.tools:
                about = schema.get("description") or (schema.get("function") or {}).get("description") or ""
                self.console.print(f"  [bold]{escape(tool_name(schema) or '?')}[/] {escape(str(about))}")
        self.console.print(escape(view.observation))
        items = [f"[bold]{number}[/] {escape(action)}" for number, action in enumerate(view.valid_actions or [], 1)]
        if len(items) > LONG_MENU:  # in columns, so the observation above stays on the screen
            self.console.print(Padding(Columns(items, padding=(0, 2)), (0, 0, 0, 2)))
        else:
            for item in items:
                self.console.print(f"  {item}")

    def parse(self, line: str, view: View) -> str | None:
        text = line.strip()
        if view.valid_actions and text.isdigit() and 1 <= int(text) <= len(view.valid_actions):
            return view.valid_actions[int(text) - 1]
        if "\\boxed" in text:
            return extract_action(text)
        return text or None

    async def act(self, views: list[View]) -> list[Reply]:
        replies = []
        for view in views:
            self.show(view)
            while True:
                self.console.print("action> ", end="")
                # A blocking read on purpose: nothing else runs while a person decides, and a read
                # in a helper thread would keep the process alive after Ctrl-C until Enter.
                line = self.input.readline()
                if not line:
                    self.console.print()
                    raise PlayerQuit("input ended")
                action = self.parse(line, view)
                if action is not None:
                    break
            replies.append(Reply(text=line.rstrip("\n"), action=action))
        return replies

    def end_episodes(self, keys: list[str]) -> None:
        return None

    async def aclose(self) -> None:
        return None
