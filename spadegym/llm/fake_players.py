"""Scripted players for the fake server: agents with a known skill and a planted blind spot.

A red-team search is tested against a target whose weakness is known. ``NimPlayer``
reads the built-in ``take_away`` game from the observation in the request and
answers with the optimal move (the Sprague-Grundy value of nim with a take
limit), except where its ``blind_spot`` says otherwise: there it takes one
stone from the first pile that has any, which loses against a good opponent.

    player = NimPlayer(blind_spot=lambda s: len(s.piles) >= 3)   # fails every three-pile game
    with FakeOpenAIServer(player) as server: ...
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_PILE = re.compile(r"^pile (\w): (\d+) stones", re.M)
_RULE = re.compile(r"take 1 to (\d+) stones")


@dataclass
class NimState:
    """What a take-away observation shows: pile sizes (in order) and the take limit."""

    piles: list[int]
    max_take: int


def read_nim(observation: str) -> NimState | None:
    piles = [int(n) for _, n in _PILE.findall(observation)]
    rule = _RULE.search(observation)
    return NimState(piles, int(rule.group(1))) if piles and rule else None


def best_move(state: NimState) -> tuple[int, int]:
    """(pile index, stones): a move to a position of Grundy value 0 when there is one."""
    k = state.max_take + 1
    moves = [(i, t) for i, p in enumerate(state.piles) for t in range(1, min(p, state.max_take) + 1)]
    for i, t in moves:
        after = list(state.piles)
        after[i] -= t
        g = 0
        for p in after:
            g ^= p % k
        if g == 0:
            return i, t
    return moves[0]


class NimPlayer:
    """A fake-server script (``(request, index) -> reply``) that plays take-away; see the module docstring."""

    def __init__(self, blind_spot: Callable[[NimState], bool] | None = None, on_opening: bool = False):
        self.blind_spot = blind_spot
        self.on_opening = on_opening  # judge the blind spot on the episode's first position, not the current one

    def __call__(self, request: dict[str, Any], index: int) -> str:
        users = [m for m in request.get("messages") or [] if m.get("role") == "user"] or [{}]
        state = read_nim(str(users[-1].get("content", "")))
        if state is None:
            return "I cannot read this game. \\boxed{pass}"
        seen = read_nim(str(users[0].get("content", ""))) if self.on_opening else state
        if self.blind_spot is not None and seen is not None and self.blind_spot(seen):
            i = next(j for j, p in enumerate(state.piles) if p > 0)
            return f"Taking one. \\boxed{{take 1 from pile {'xyz'[i]}}}"
        i, t = best_move(state)
        return f"Leave a zero position. \\boxed{{take {t} from pile {'xyz'[i]}}}"
