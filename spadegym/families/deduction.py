"""Logical Deduction families: code breaker, suspect grid, hidden order.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

import itertools

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Logical Deduction"


class CodeBreakerEnv(EpisodeCore):
    """Mastermind: set the colour of each slot, then check the guess for feedback."""

    TITLE = "code breaker"
    COLOURS = ["red", "blue", "green", "yellow", "white", "black"]

    def setup(self):
        n, c = self.knobs["slots"], self.knobs["colors"]
        self.guess = [self.COLOURS[0]] * n
        self.secret = list(self.guess)
        while self.secret == self.guess:  # an unbroken code, so the solution takes several steps
            self.secret = [self.rng.choice(self.COLOURS[:c]) for _ in range(n)]
        self.history = []

    def _feedback(self, guess=None, code=None):
        guess, code = guess or self.guess, code or self.secret
        exact = sum(g == s for g, s in zip(guess, code))
        common = sum(min(guess.count(c), code.count(c)) for c in self.COLOURS)
        return exact, common - exact

    def _fitting(self):
        # The first code, in the listed colour order, that agrees with the feedback of every checked guess.
        for code in itertools.product(self.COLOURS[: self.knobs["colors"]], repeat=self.knobs["slots"]):
            if all(self._feedback(guess.split(), list(code)) == (exact, near)
                   for guess, exact, near in self.history):
                return list(code)
        return list(self.guess)

    def observe(self):
        lines = [f"slots: {self.knobs['slots']}, colours: {', '.join(self.COLOURS[: self.knobs['colors']])}",
                 "current guess: " + " ".join(self.guess)]
        for guess, exact, near in self.history:
            lines.append(f"checked {guess}: {exact} exact, {near} right colour wrong slot")
        return lines

    def actions(self):
        acts = [f"set {s} {c}" for s in range(1, self.knobs["slots"] + 1) for c in self.COLOURS[: self.knobs["colors"]]]
        return acts + ["check"]

    def apply(self, action):
        if action == "check":
            exact, near = self._feedback()
            self.history.append((" ".join(self.guess), exact, near))
            if exact == len(self.secret):
                return "feedback: all slots exact; the code is broken", 1.0, "win"
            return f"feedback: {exact} exact, {near} right colour wrong slot", exact / len(self.secret), None
        _, s, c = action.split()
        self.guess[int(s) - 1] = c
        return f"slot {s} set to {c}", 0.0, None

    def policy(self):
        for i, (g, s) in enumerate(zip(self.guess, self.secret)):
            if g != s:
                return f"set {i + 1} {s}"
        return "check"

    def advice(self):
        # What a player who sees only the checked guesses does: try the first code that fits them all.
        code = self._fitting()
        for i, (g, c) in enumerate(zip(self.guess, code)):
            if g != c:
                return f"the code {' '.join(code)} fits every feedback so far: set {i + 1} {c}"
        return "the current guess fits every feedback so far: check"


class SuspectGridEnv(EpisodeCore):
    """Read clues that clear suspects and weapons, mark the remaining pair, accuse."""

    TITLE = "suspect grid"
    PEOPLE = ["ada", "bo", "cy", "di", "ed", "flo"]
    TOOLS = ["rope", "knife", "wrench", "candle"]

    def setup(self):
        self.people = self.PEOPLE[: self.knobs["suspects"]]
        self.tools = self.TOOLS[: self.knobs["weapons"]]
        self.culprit = self.rng.choice(self.people)
        self.weapon = self.rng.choice(self.tools)
        facts = [f"{p} has an alibi" for p in self.people if p != self.culprit]
        facts += [f"the {t} is untouched" for t in self.tools if t != self.weapon]
        self.rng.shuffle(facts)
        n = self.knobs["clues"]
        self.clues = [[] for _ in range(n)]
        for i, fact in enumerate(facts):
            self.clues[i % n].append(fact)
        self.clues = ["; ".join(c) if c else "nothing useful" for c in self.clues]
        self.read = []
        self.marked = {"suspect": "none", "weapon": "none"}

    def observe(self):
        lines = ["suspects: " + ", ".join(self.people), "weapons: " + ", ".join(self.tools)]
        lines += [f"clue {i}: {self.clues[i - 1]}" for i in self.read]
        lines.append(f"marked: suspect {self.marked['suspect']}, weapon {self.marked['weapon']}")
        return lines

    def actions(self):
        acts = [f"read clue {i}" for i in range(1, len(self.clues) + 1)]
        acts += [f"suspect {p}" for p in self.people] + [f"weapon {t}" for t in self.tools]
        return acts + ["accuse"]

    def apply(self, action):
        words = action.split()
        if words[0] == "read":
            i = int(words[2])
            fresh = i not in self.read
            if fresh:
                self.read.append(i)
            return f"clue {i}: {self.clues[i - 1]}", 0.5 if fresh else 0.0, None
        if words[0] in ("suspect", "weapon"):
            self.marked[words[0]] = words[1]
            return f"marked {words[0]} {words[1]}", 0.0, None
        if "none" in self.marked.values():
            return "mark a suspect and a weapon before accusing", -0.5, None
        if self.marked == {"suspect": self.culprit, "weapon": self.weapon}:
            return f"correct: {self.culprit} with the {self.weapon}", 1.0, "win"
        return f"wrong accusation: it was {self.culprit} with the {self.weapon}", 0.0, "lose"

    def policy(self):
        if self.marked["suspect"] != self.culprit:
            return f"suspect {self.culprit}"
        if self.marked["weapon"] != self.weapon:
            return f"weapon {self.weapon}"
        return "accuse"

    def advice(self):
        # What a player who sees only the clues read so far does: read until one pair is left, mark it, accuse.
        read = " ".join(self.clues[i - 1] for i in self.read)
        people = [p for p in self.people if f"{p} has an alibi" not in read]
        tools = [t for t in self.tools if f"the {t} is untouched" not in read]
        unread = [i for i in range(1, len(self.clues) + 1) if i not in self.read]
        if (len(people) > 1 or len(tools) > 1) and unread:
            return f"the clues read so far leave more than one suspect or weapon: read clue {unread[0]}"
        if self.marked["suspect"] != people[0]:
            return f"only {people[0]} has no alibi in the clues: mark suspect {people[0]}"
        if self.marked["weapon"] != tools[0]:
            return f"only the {tools[0]} is not cleared by the clues: mark weapon {tools[0]}"
        return "the marks are the only pair the clues leave: accuse"


class HiddenOrderEnv(EpisodeCore):
    """Compare items on a balance, then place them from lightest to heaviest."""

    TITLE = "hidden order"

    def setup(self):
        n = self.knobs["items"]
        self.weight = dict(zip(range(1, n + 1), self.rng.sample(range(1, 10 * n), n)))
        self.placed = []
        self.known = []
        self.strikes = self.knobs["mistakes"]

    def _left(self):
        return sorted(set(self.weight) - set(self.placed))

    def observe(self):
        lines = [f"items: {', '.join(f'item {i}' for i in sorted(self.weight))}",
                 "placed so far: " + (", ".join(f"item {i}" for i in self.placed) or "none")]
        lines += self.known
        lines.append(f"mistakes allowed: {self.strikes}")
        return lines

    def actions(self):
        n = self.knobs["items"]
        acts = [f"compare {a} {b}" for a in range(1, n + 1) for b in range(a + 1, n + 1)]
        return acts + [f"place {i}" for i in self._left()]

    def apply(self, action):
        words = action.split()
        if words[0] == "compare":
            a, b = int(words[1]), int(words[2])
            lo, hi = (a, b) if self.weight[a] < self.weight[b] else (b, a)
            fact = f"item {lo} is lighter than item {hi}"
            if fact not in self.known:
                self.known.append(fact)
            return fact, 0.0, None
        i = int(words[1])
        if i != min(self._left(), key=self.weight.get):
            self.strikes -= 1
            if self.strikes < 0:
                return f"item {i} is not the lightest remaining; the order is wrong", 0.0, "lose"
            return f"item {i} is not the lightest remaining (rejected)", -1.0, None
        self.placed.append(i)
        if not self._left():
            return "all items placed in order", 1.0, "win"
        return f"item {i} placed", 1.0 / len(self.weight), None

    def policy(self):
        return f"place {min(self._left(), key=self.weight.get)}"

    def advice(self):
        # What a player who sees only the comparisons made so far does: find the lightest left item
        # by comparing a candidate with every other left item, then place it.
        left = self._left()
        best = left[0]
        for other in left[1:]:
            if f"item {other} is lighter than item {best}" in self.known:
                best = other
            elif f"item {best} is lighter than item {other}" not in self.known:
                a, b = sorted((best, other))
                return f"no comparison of item {a} and item {b} yet: compare {a} {b}"
        return f"item {best} is lighter than every other item left: place {best}"


register_family(Family(
    name="code_breaker", skill=SKILL, env_class=CodeBreakerEnv, imports=("itertools",),
    description="Break a hidden colour code from exact / right-colour feedback on checked guesses.",
    own_knobs={"slots": [2, 3, 3, 4], "colors": [3, 3, 4, 4], "turns": [12, 12, 12, 12]},
    extend={"slots": Extend(1, 5), "colors": Extend(1, 5), "turns": Extend(-1, 8)},
    phrases={"code breaker": ("code breaker", "colour code", "secret pattern", "mastermind"),
             "slots": ("slots", "positions", "places", "pegs"), "colours": ("colours", "colors", "paints", "hues"),
             "current guess": ("current guess", "your guess", "attempt", "proposal"),
             "checked": ("checked", "tried", "tested", "submitted"), "exact": ("exact", "spot on", "in place", "perfect"),
             "right colour wrong slot": ("right colour wrong slot", "misplaced", "colour elsewhere", "wrong place"),
             "feedback": ("feedback", "result", "response", "verdict"), "fits": ("fits", "matches", "agrees with", "suits")},
    verbs={"set": ("set", "put", "paint", "mark"), "check": ("check", "submit", "test", "verify")},
))
register_family(Family(
    name="suspect_grid", skill=SKILL, env_class=SuspectGridEnv,
    description="Eliminate suspects and weapons with clues, then accuse the remaining pair.",
    own_knobs={"suspects": [2, 3, 5, 6], "weapons": [2, 3, 4, 4], "clues": [2, 3, 4, 5],
               "turns": [12, 12, 12, 10]},
    extend={"clues": Extend(1, 8), "turns": Extend(-1, 8)},
    phrases={"suspect grid": ("suspect grid", "whodunit", "case file", "murder board"),
             "suspects": ("suspects", "people", "persons of interest", "characters"),
             "weapons": ("weapons", "tools", "objects", "instruments"), "marked": ("marked", "chosen", "noted", "selected"),
             "has an alibi": ("has an alibi", "is cleared", "was elsewhere", "is innocent"),
             "is untouched": ("is untouched", "is clean", "was not used", "is unused"),
             "nothing useful": ("nothing useful", "no lead", "a dead end", "nothing new")},
    verbs={"read": ("read", "study", "examine", "open"), "clue": ("clue", "note", "lead", "tip"),
           "suspect": ("suspect", "name", "blame", "finger"), "weapon": ("weapon", "tool", "arm", "implement"),
           "accuse": ("accuse", "charge", "declare", "solve")},
))
register_family(Family(
    name="hidden_order", skill=SKILL, env_class=HiddenOrderEnv,
    description="Discover the hidden weight order of items by comparisons and place them lightest first.",
    own_knobs={"items": [3, 4, 4, 5], "mistakes": [1, 1, 0, 0], "turns": [8, 12, 14, 16]},
    extend={"items": Extend(1, 8), "turns": Extend(2, 22)},
    phrases={"hidden order": ("hidden order", "weight ranking", "balance sort", "heavy light"),
             "items": ("items", "objects", "pieces", "things"), "item": ("item", "object", "piece", "thing"),
             "placed so far": ("placed so far", "order so far", "ranked", "lined up"),
             "is lighter than": ("is lighter than", "weighs less than", "is below", "is outweighed by"),
             "mistakes allowed": ("mistakes allowed", "errors left", "spare mistakes", "lives"),
             "lightest": ("lightest", "least heavy", "smallest weight", "lowest")},
    verbs={"compare": ("compare", "weigh", "balance", "test"), "place": ("place", "put", "rank", "line up")},
))
