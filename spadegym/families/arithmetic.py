"""Mathematical Reasoning families: button lock, water jugs, take-away game.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Mathematical Reasoning"


class ButtonLockEnv(EpisodeCore):
    """A display shows a number; each button applies a hidden arithmetic operation."""

    TITLE = "button lock"
    OPS = [("+", 1), ("+", 2), ("+", 3), ("+", 5), ("+", 7), ("-", 1), ("-", 2), ("-", 4),
           ("*", 2), ("*", 3)]

    def setup(self):
        n, depth = self.knobs["buttons"], self.knobs["depth"]
        while True:
            self.ops = self.rng.sample(self.OPS, n)
            self.value = self.rng.randint(0, 9)
            target = self.value
            for _ in range(depth):
                target = self._press(target, self.rng.randrange(n))
            if target != self.value and self._search(self.value, target, depth) is not None \
                    and self._search(self.value, target, depth - 1) is None:
                break
        self.target = target
        self.known = set()

    def _press(self, value, i):
        op, arg = self.ops[i]
        return value + arg if op == "+" else value - arg if op == "-" else value * arg

    def _search(self, start, target, limit):
        # Breadth-first search over press sequences: the first button of a shortest one.
        frontier, seen = [(start, None)], {start}
        for _ in range(limit):
            nxt = []
            for value, first in frontier:
                for i in range(len(self.ops)):
                    v = self._press(value, i)
                    f = i if first is None else first
                    if v == target:
                        return f
                    if v not in seen and -200 < v < 2000:
                        seen.add(v)
                        nxt.append((v, f))
            frontier = nxt
        return None

    def _describe(self, i):
        op, arg = self.ops[i]
        return {"+": "adds", "-": "subtracts", "*": "multiplies by"}[op] + f" {arg}"

    def observe(self):
        lines = [f"display: {self.value}", f"target: {self.target}"]
        for i in range(len(self.ops)):
            what = self._describe(i) if i in self.known else "unknown effect"
            lines.append(f"button {i + 1}: {what}")
        return lines

    def actions(self):
        return [f"press {i + 1}" for i in range(len(self.ops))]

    def apply(self, action):
        i = int(action.split()[1]) - 1
        before = abs(self.target - self.value)
        self.value = self._press(self.value, i)
        self.known.add(i)
        text = f"button {i + 1} {self._describe(i)}; display now {self.value}"
        if self.value == self.target:
            return text + "; the lock opens", 1.0, "win"
        return text, (before - abs(self.target - self.value)) / max(1, before), None

    def policy(self):
        first = self._search(self.value, self.target, self.max_turns - self.turn)
        return f"press {1 if first is None else first + 1}"

    def advice(self):
        i = self.policy().split()[1]
        return f"press button {i} next: it moves the display toward the target"


class WaterJugsEnv(EpisodeCore):
    """Measure an exact amount with jugs whose capacities show only once filled."""

    TITLE = "water jugs"
    NAMES = "abc"

    def budget(self):
        return self.knobs["depth"] + self.knobs["slack"]

    def setup(self):
        n, depth = self.knobs["jugs"], self.knobs["depth"]
        while True:
            self.caps = self.rng.sample(range(2, self.knobs["capacity"] + 1), n)
            dist = self._distances(tuple([0] * n))
            amounts = {}
            for state, d in dist.items():
                for amount in state:
                    if amount and (amount not in amounts or d < amounts[amount]):
                        amounts[amount] = d
            # With two jugs new amounts appear only at even depths: take the deepest <= depth.
            best = max((d for d in amounts.values() if d <= depth), default=0)
            choices = sorted(a for a, d in amounts.items() if d == best)
            if best >= min(depth, 2):
                self.target = self.rng.choice(choices)
                break
        self.levels = [0] * n
        self.known = set()

    def _moves(self):
        names = self.NAMES[: len(self.caps)]
        moves = [f"fill {j}" for j in names] + [f"empty {j}" for j in names]
        moves += [f"pour {a} into {b}" for a in names for b in names if a != b]
        return moves

    def _after(self, state, move):
        state = list(state)
        words = move.split()
        i = self.NAMES.index(words[1])
        if words[0] == "fill":
            state[i] = self.caps[i]
        elif words[0] == "empty":
            state[i] = 0
        else:
            j = self.NAMES.index(words[3])
            amount = min(state[i], self.caps[j] - state[j])
            state[i] -= amount
            state[j] += amount
        return tuple(state)

    def _distances(self, start):
        dist, frontier = {start: 0}, [start]
        while frontier:
            nxt = []
            for state in frontier:
                for move in self._moves():
                    s = self._after(state, move)
                    if s not in dist:
                        dist[s] = dist[state] + 1
                        nxt.append(s)
            frontier = nxt
        return dist

    def observe(self):
        lines = [f"target: {self.target} liters in any jug"]
        for i, name in enumerate(self.NAMES[: len(self.caps)]):
            cap = f"capacity {self.caps[i]}" if i in self.known else "capacity unknown"
            lines.append(f"jug {name}: {self.levels[i]} liters, {cap}")
        return lines

    def actions(self):
        return self._moves()

    def apply(self, action):
        self.levels = list(self._after(self.levels, action))
        words = action.split()
        if words[0] == "fill":
            self.known.add(self.NAMES.index(words[1]))
        text = f"{action}: jugs hold {', '.join(map(str, self.levels))}"
        if self.target in self.levels:
            return text + f"; measured {self.target} liters", 1.0, "win"
        return text, 0.0, None

    def policy(self):
        # Shortest move sequence from the current levels to any state holding the target.
        start = tuple(self.levels)
        first, frontier = {start: None}, [start]
        while frontier:
            nxt = []
            for state in frontier:
                for move in self._moves():
                    s = self._after(state, move)
                    if s in first:
                        continue
                    first[s] = first[state] or move
                    if self.target in s:
                        return first[s]
                    nxt.append(s)
            frontier = nxt
        return self._moves()[0]

    def advice(self):
        # Verbatim is safe here: the first step is a fill, the last a pour (a fill is never the answer).
        return f"{self.policy()} next: it is on the shortest way to {self.target} liters"


class TakeAwayEnv(EpisodeCore):
    """Nim with a take limit against an opponent; whoever takes the last stone wins."""

    TITLE = "take-away game"

    def budget(self):
        return self.knobs["piles"] * self.knobs["stones"] // 2 + 3

    def setup(self):
        while True:
            self.piles = [self.rng.randint(2, self.knobs["stones"]) for _ in range(self.knobs["piles"])]
            if self._grundy(self.piles) != 0:
                break
        self.last = "none yet"

    def shift(self, moves):
        # A shifted start: more stones on random piles (a random move would hand the opponent a move),
        # still a position the first player can win.
        for _ in range(moves):
            self.piles[self.rng.randrange(len(self.piles))] += 1
        while self._grundy(self.piles) == 0:
            self.piles[self.rng.randrange(len(self.piles))] += 1

    def _grundy(self, piles):
        g = 0
        for p in piles:
            g ^= p % (self.knobs["max_take"] + 1)
        return g

    def _moves(self, piles):
        return [(i, t) for i, p in enumerate(piles) for t in range(1, min(p, self.knobs["max_take"]) + 1)]

    def _best(self, piles):
        for i, t in self._moves(piles):
            after = list(piles)
            after[i] -= t
            if self._grundy(after) == 0:
                return i, t
        return max(range(len(piles)), key=lambda i: piles[i]), 1

    def observe(self):
        lines = [f"pile {'xyz'[i]}: {p} stones" for i, p in enumerate(self.piles)]
        lines.append(f"rule: take 1 to {self.knobs['max_take']} stones from one pile; taking the last stone wins")
        lines.append(f"opponent last move: {self.last}")
        return lines

    def actions(self):
        return [f"take {t} from pile {'xyz'[i]}" for i, t in self._moves(self.piles)]

    def apply(self, action):
        words = action.split()
        t, i = int(words[1]), "xyz".index(words[4])
        self.piles[i] -= t
        if sum(self.piles) == 0:
            return "you took the last stone", 1.0, "win"
        good = self._grundy(self.piles) == 0
        if self.rng.random() < self.knobs["opponent"]:
            oi, ot = self._best(self.piles)
        else:
            oi, ot = self.rng.choice(self._moves(self.piles))
        self.piles[oi] -= ot
        self.last = f"took {ot} from pile {'xyz'[oi]}"
        if sum(self.piles) == 0:
            return f"the opponent {self.last} and took the last stone", 0.0, "lose"
        return f"you took {t} from pile {'xyz'[i]}; opponent {self.last}", 1.0 if good else -0.5, None

    def policy(self):
        i, t = self._best(self.piles)
        return f"take {t} from pile {'xyz'[i]}"

    def advice(self):
        i, t = self._best(self.piles)
        return f"take {t} stones from pile {'xyz'[i]} next: it leaves the opponent only losing moves"


register_family(Family(
    name="button_lock", skill=SKILL, env_class=ButtonLockEnv,
    description="Reach a target number by pressing buttons whose arithmetic effects are hidden until pressed.",
    own_knobs={"buttons": [4, 5, 5, 5], "depth": [3, 3, 4, 5], "turns": [8, 8, 8, 7]},
    extend={"buttons": Extend(1, 8), "depth": Extend(1, 7)},
    phrases={"button lock": ("button lock", "keypad lock", "dial safe", "combination box"),
             "display": ("display", "screen", "readout", "counter"), "target": ("target", "goal", "code", "wanted"),
             "button": ("button", "key", "dial", "knob"), "unknown effect": ("unknown effect", "not tried", "untested", "mystery"),
             "adds": ("adds", "plus", "increases by", "raises by"), "subtracts": ("subtracts", "minus", "decreases by", "lowers by"),
             "multiplies by": ("multiplies by", "times", "scales by", "multiplied by"),
             "the lock opens": ("the lock opens", "unlocked", "the safe opens", "access granted")},
    verbs={"press": ("press", "push", "hit", "tap")},
))
register_family(Family(
    name="water_jugs", skill=SKILL, env_class=WaterJugsEnv,
    description="Measure an exact amount of water with jugs whose capacities are revealed only when filled.",
    own_knobs={"jugs": [2, 2, 3, 3], "capacity": [5, 7, 9, 11], "depth": [2, 3, 4, 5], "slack": [3, 3, 2, 1]},
    extend={"capacity": Extend(2, 15), "depth": Extend(1, 8), "slack": Extend(-1, 0)},
    phrases={"water jugs": ("water jugs", "measuring cans", "pitchers", "bucket puzzle"),
             "target": ("target", "goal", "wanted", "aim"), "liters": ("liters", "litres", "units", "measures"),
             "capacity": ("capacity", "size", "holds", "volume"), "in any jug": ("in any jug", "in one jug", "in some jug", "in a single jug"),
             "jugs hold": ("jugs hold", "levels", "contents", "amounts"), "measured": ("measured", "reached", "got", "obtained"),
             "jug": ("jug", "can", "pitcher", "bucket")},
    verbs={"fill": ("fill", "top up", "load", "brim"), "empty": ("empty", "drain", "dump", "clear"),
           "pour": ("pour", "transfer", "decant", "tip"), "into": ("into", "to", "onto", "towards")},
))
register_family(Family(
    name="take_away", skill=SKILL, env_class=TakeAwayEnv,
    description="Win a take-away stone game (nim with a take limit) against an opponent of hidden skill.",
    own_knobs={"piles": [2, 2, 3, 3], "stones": [7, 7, 9, 11], "max_take": [2, 3, 3, 3],
               "opponent": [0.9, 0.9, 1.0, 1.0]},
    extend={"stones": Extend(2, 15), "max_take": Extend(1, 5)},
    phrases={"take-away game": ("take-away game", "stone duel", "last pebble", "heap battle"),
             "stones": ("stones", "pebbles", "tokens", "chips"), "stone": ("stone", "pebble", "token", "chip"),
             "rule": ("rule", "how to play", "law", "rules"), "opponent": ("opponent", "rival", "other player", "adversary"),
             "last move": ("last move", "previous move", "latest move", "recent move"),
             "wins": ("wins", "is the winner", "takes the game", "triumphs")},
    verbs={"take": ("take", "remove", "grab", "pull"), "from": ("from", "off", "out of", "off of"),
           "pile": ("pile", "heap", "stack", "mound")},
))
