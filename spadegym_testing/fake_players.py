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


# -- several families ------------------------------------------------------------------------------
# Each solver reads one built-in family's current observation and returns the move a strong player
# makes (None: the observation is not that game's). They see only what an agent sees.

_GAME = re.compile(r"^game: (.+)$", re.M)
_MENU = re.compile(r"^actions: (.+)$", re.M)


def game_of(observation: str) -> str | None:
    found = _GAME.search(observation)
    return found.group(1).strip() if found else None


def menu(observation: str) -> list[str]:
    found = _MENU.search(observation)
    return [a.strip() for a in found.group(1).split(",")] if found else []


def _line(observation: str, label: str) -> str:
    found = re.search(rf"^{label}: (.*)$", observation, re.M)
    return found.group(1).strip() if found else ""


def nim_move(observation: str) -> str | None:
    state = read_nim(observation)
    if state is None:
        return None
    i, t = best_move(state)
    return f"take {t} from pile {'xyz'[i]}"


def knapsack_move(observation: str) -> str | None:
    """Inspect every value first, then take the best packing of the room left, then done."""
    bag = re.search(r"^bag: (\d+) of (\d+) weight used, value (\d+)", observation, re.M)
    goal = re.search(r"^goal: total value at least (\d+)", observation, re.M)
    items = re.findall(r"^item (\d+): weight (\d+), value (\d+|\?), (on table|in bag)", observation, re.M)
    if not (bag and goal and items):
        return None
    unseen = [i for i, _, v, _ in items if v == "?"]
    if unseen:
        return f"inspect {unseen[0]}"
    used, capacity, value = map(int, bag.groups())
    if value >= int(goal.group(1)):
        return "done"
    free = [(int(i), int(w), int(v)) for i, w, v, where in items if where == "on table"]
    best: tuple[int, list[tuple[int, int, int]]] = (0, [])
    for mask in range(1 << len(free)):
        pick = [free[j] for j in range(len(free)) if mask >> j & 1]
        if sum(w for _, w, _ in pick) <= capacity - used and sum(v for *_, v in pick) > best[0]:
            best = (sum(v for *_, v in pick), pick)
    return f"take {max(best[1], key=lambda item: item[2])[0]}" if best[1] else "done"


def order_move(observation: str) -> str | None:
    """Find the lightest item left (comparisons, known ones reused transitively), then place it."""
    items = [int(n) for n in re.findall(r"item (\d+)", _line(observation, "items"))]
    if not items:
        return None
    placed = {int(n) for n in re.findall(r"item (\d+)", _line(observation, "placed so far"))}
    lighter = {(int(a), int(b)) for a, b in re.findall(r"item (\d+) is lighter than item (\d+)", observation)}
    changed = True
    while changed:  # transitive closure: a < b and b < c give a < c
        extra = {(a, d) for a, b in lighter for c, d in lighter if b == c} - lighter
        lighter |= extra
        changed = bool(extra)
    left = [i for i in items if i not in placed]
    best = left[0]
    for other in left[1:]:
        if (other, best) in lighter:
            best = other
        elif (best, other) not in lighter:
            a, b = sorted((best, other))
            return f"compare {a} {b}"
    return f"place {best}"


def _next_term(terms: list[int]) -> list[int]:
    """Predictions of the next term by each rule the terms fit, the best-supported rule first."""
    diffs = [b - a for a, b in zip(terms, terms[1:])]
    seconds = [b - a for a, b in zip(diffs, diffs[1:])]
    guesses = []
    if len(diffs) >= 2 and len(set(diffs)) == 1:
        guesses.append(terms[-1] + diffs[0])
    if len(terms) >= 3 and all(terms[i] == terms[i - 1] + terms[i - 2] for i in range(2, len(terms))):
        guesses.append(terms[-1] + terms[-2])
    if seconds and len(set(seconds)) == 1:
        guesses.append(terms[-1] + diffs[-1] + seconds[0])
    if len(diffs) >= 2 and all(diffs[i] == diffs[i - 2] for i in range(2, len(diffs))):
        guesses.append(terms[-1] + diffs[-2])
    return guesses


def sequence_move(observation: str) -> str | None:
    shown = _line(observation, "sequence")
    if not shown:
        return None
    terms = [int(t) for t in shown.replace("?", "").replace(",", " ").split()]
    options = {int(a.split()[1]) for a in menu(observation) if a.startswith("say ")}
    for guess in _next_term(terms):
        if guess in options:
            return f"say {guess}"
    return None


def motif_move(observation: str) -> str | None:
    """The shortest period every visible tile agrees with gives the first tile to fill."""
    row = _line(observation, "row").split()
    if "?" not in row:
        return None
    target = row.index("?")
    for period in range(1, len(row)):
        phases: dict[int, str] = {}
        agrees = all(phases.setdefault(i % period, s) == s for i, s in enumerate(row) if s not in ("_", "?"))
        if agrees and target % period in phases:
            return f"place {phases[target % period]}"
    return None


#: Game title (the observation's ``game:`` line) -> solver.
SOLVERS: dict[str, Callable[[str], str | None]] = {
    "take-away game": nim_move, "knapsack": knapsack_move, "hidden order": order_move,
    "number sequence": sequence_move, "motif fill": motif_move,
}


class FamilyPlayer:
    """A fake-server script that plays several built-in families well, and badly in planted blind spots.

    ``blind_spots`` maps a game title to a test of the episode's opening observation; in a
    blind spot the player makes the first listed move that is not the solver's (a plausible
    mistake), as a model that misreads that kind of instance would.

        player = FamilyPlayer({"knapsack": lambda opening: opening.count("\\nitem ") >= 8})
    """

    def __init__(self, blind_spots: dict[str, Callable[[str], bool]] | None = None):
        self.blind_spots = dict(blind_spots or {})

    def __call__(self, request: dict[str, Any], index: int) -> str:
        users = [str(m.get("content", "")) for m in request.get("messages") or [] if m.get("role") == "user"] or [""]
        current, opening = users[-1], users[0]
        game = game_of(current)
        solver = SOLVERS.get(game or "")
        best = solver(current) if solver else None
        if best is None:
            return "I cannot read this game. \\boxed{pass}"
        spot = self.blind_spots.get(game or "")
        if spot is not None and spot(opening):
            wrong = next((a for a in menu(current) if a != best), best)
            return f"This one looks easy. \\boxed{{{wrong}}}"
        return f"Working it out. \\boxed{{{best}}}"
