"""Pattern Recognition families: number sequence, rule sorter, motif fill.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Pattern Recognition"


class NumberSequenceEnv(EpisodeCore):
    """Continue a number sequence term by term; each confirmed term reveals more of the rule."""

    TITLE = "number sequence"

    def setup(self):
        kind = self.rng.randrange(self.knobs["complexity"])
        a, d, e = self.rng.randint(1, 9), self.rng.randint(2, 7), self.rng.randint(1, 5)
        terms, n = [], self.knobs["shown"] + self.knobs["terms"]
        for i in range(n):
            if kind == 0:  # constant difference
                terms.append(a + d * i)
            elif kind == 1:  # alternating differences
                terms.append(terms[-1] + (d if i % 2 else e) if terms else a)
            elif kind == 2:  # growing differences
                terms.append(terms[-1] + d + e * (i - 1) if terms else a)
            else:  # each term is the sum of the two before
                terms.append(terms[-1] + terms[-2] if len(terms) > 1 else (a, d)[i])
        self.rule = ["adds the same amount each time", "alternates between two steps",
                     "adds a step that grows each time", "adds the two previous terms"][kind]
        self.terms, self.known = terms, self.knobs["shown"]
        self.strikes = self.knobs["mistakes"]
        self._draw_options()

    def _draw_options(self):
        true = self.terms[self.known]
        wrong = set()
        while len(wrong) < self.knobs["options"] - 1:
            w = true + self.rng.choice([-1, 1]) * self.rng.randint(1, 6)
            if w != true:
                wrong.add(w)
        self.options = sorted(wrong | {true})

    def observe(self):
        shown = ", ".join(map(str, self.terms[: self.known]))
        left = len(self.terms) - self.known
        return [f"sequence: {shown}, ?", f"terms still to find: {left}", f"mistakes allowed: {self.strikes}"]

    def actions(self):
        return [f"say {x}" for x in self.options]

    def apply(self, action):
        x = int(action.split()[1])
        if x != self.terms[self.known]:
            self.strikes -= 1
            self.options.remove(x)
            if self.strikes < 0:
                return f"{x} is wrong; the next term was {self.terms[self.known]}", 0.0, "lose"
            return f"{x} is wrong", -1.0, None
        self.known += 1
        if self.known == len(self.terms):
            return f"{x} is right; the sequence is complete", 1.0, "win"
        self._draw_options()
        return f"{x} is right", 1.0, None

    def policy(self):
        return f"say {self.terms[self.known]}"

    def advice(self):
        # Terms grow, so the next term is never the last answer: naming it verbatim is safe.
        return f"the sequence {self.rule}: the next number is {self.terms[self.known]}, {self.policy()}"


class RuleSorterEnv(EpisodeCore):
    """Infer a hidden rule from labelled examples and sort new objects by it."""

    TITLE = "rule sorter"
    ATTRS = {"size": ["small", "large"], "colour": ["red", "blue", "green"],
             "shape": ["circle", "square", "triangle"]}

    def _obj(self):
        return {a: self.rng.choice(v) for a, v in self.ATTRS.items()}

    def _fits(self, obj):
        hits = [obj[a] == v for a, v in self.rule]
        if self.knobs["complexity"] == 3:
            return hits[0] and not hits[1]
        return all(hits)

    def setup(self):
        attrs = self.rng.sample(list(self.ATTRS), 2)
        self.rule = [(a, self.rng.choice(self.ATTRS[a])) for a in attrs][: 1 if self.knobs["complexity"] == 1 else 2]
        if self.knobs["complexity"] == 3:  # "A but not B"
            self.text = f"{self.rule[0][1]} things that are not {self.rule[1][1]}"
        else:
            self.text = " and ".join(v for _, v in self.rule) + " things"
        self.examples = [self._obj() for _ in range(self.knobs["examples"])]
        while not any(map(self._fits, self.examples)):
            self.examples.append(self._obj())
        self.items = [self._obj() for _ in range(self.knobs["items"])]
        self.sorted = {}
        self.strikes = self.knobs.get("mistakes", 0)

    @staticmethod
    def _name(obj):
        return f"{obj['size']} {obj['colour']} {obj['shape']}"

    def observe(self):
        lines = [f"example: {self._name(o)} -> {'accepted' if self._fits(o) else 'rejected'}"
                 for o in self.examples]
        for i, o in enumerate(self.items, 1):
            verdict = self.sorted.get(i, "unsorted")
            lines.append(f"item {i}: {self._name(o)} ({verdict})")
        lines.append(f"mistakes allowed: {self.strikes}")
        return lines

    def actions(self):
        left = [i for i in range(1, len(self.items) + 1) if i not in self.sorted]
        return [f"{verb} {i}" for i in left for verb in ("accept", "reject")]

    def apply(self, action):
        verb, i = action.split()
        i = int(i)
        truth = "accepted" if self._fits(self.items[i - 1]) else "rejected"
        self.sorted[i] = truth
        if (verb == "accept") != (truth == "accepted"):
            self.strikes -= 1
            if self.strikes < 0:
                return f"wrong: item {i} is {truth}", 0.0, "lose"
            return f"wrong: item {i} is {truth}", -1.0, None
        if len(self.sorted) == len(self.items):
            return f"right: item {i} is {truth}; all items sorted", 1.0, "win"
        return f"right: item {i} is {truth}", 1.0 / len(self.items), None

    def policy(self):
        for i, o in enumerate(self.items, 1):
            if i not in self.sorted:
                return f"{'accept' if self._fits(o) else 'reject'} {i}"
        return "accept 1"

    def advice(self):
        return f"the rule accepts {self.text}: {self.policy()}"


class MotifFillEnv(EpisodeCore):
    """A row of symbols repeats a hidden motif; fill the missing tiles in order."""

    TITLE = "motif fill"
    SYMBOLS = ["sun", "moon", "star", "leaf", "fire", "rain"]

    def setup(self):
        alphabet = self.SYMBOLS[: self.knobs["alphabet"]]
        p = self.knobs["period"]
        while True:
            self.motif = [self.rng.choice(alphabet) for _ in range(p)]
            # A motif that repeats inside itself would have a shorter period.
            if all(self.motif != self.motif[s:] + self.motif[:s] for s in range(1, p)):
                break
        length = 2 * p + self.knobs["blanks"] + 1
        self.row = [self.motif[i % p] for i in range(length)]
        self.hidden = list(range(length - self.knobs["blanks"], length))
        self.masked = {i for i in range(length - self.knobs["blanks"]) if self.rng.random() < self.knobs["noise"]}
        self.filled = []
        self.alphabet = alphabet
        self.strikes = self.knobs.get("mistakes", 0)

    def _shown(self):
        out = []
        for i, s in enumerate(self.row):
            if i in self.hidden:
                j = self.hidden.index(i)
                out.append(self.filled[j] if j < len(self.filled) else "?")
            else:
                out.append("_" if i in self.masked else s)
        return out

    def observe(self):
        return [f"row: {' '.join(self._shown())}",
                "_ marks a smudged tile, ? a tile to fill (left to right)",
                f"tiles to fill: {len(self.hidden) - len(self.filled)}",
                f"mistakes allowed: {self.strikes}"]

    def actions(self):
        return [f"place {s}" for s in self.alphabet]

    def apply(self, action):
        s = action.split()[1]
        want = self.row[self.hidden[len(self.filled)]]
        if s != want:
            self.strikes -= 1
            if self.strikes < 0:
                return f"{s} does not fit; it was {want}", 0.0, "lose"
            return f"{s} does not fit", -1.0, None
        self.filled.append(s)
        if len(self.filled) == len(self.hidden):
            return f"{s} fits; the row is complete", 1.0, "win"
        return f"{s} fits", 1.0 / len(self.hidden), None

    def policy(self):
        return f"place {self.row[self.hidden[len(self.filled)]]}"

    def advice(self):
        s = self.policy().split()[1]
        return f"the next missing tile is a {s}: place a {s}"


register_family(Family(
    name="number_sequence", skill=SKILL, env_class=NumberSequenceEnv,
    description="Find the rule of a number sequence and say its next terms one at a time.",
    own_knobs={"complexity": [1, 2, 3, 4], "shown": [5, 4, 4, 3], "terms": [2, 2, 3, 3],
               "options": [5, 5, 5, 6], "mistakes": [1, 1, 0, 0], "turns": [8, 8, 8, 8]},
    extend={"terms": Extend(1, 6), "options": Extend(1, 9)},
    phrases={"number sequence": ("number sequence", "series", "progression", "number chain"),
             "sequence": ("sequence", "series", "progression", "chain"),
             "terms still to find": ("terms still to find", "numbers missing", "left to find", "blanks left"),
             "mistakes allowed": ("mistakes allowed", "errors left", "spare mistakes", "lives"),
             "next number": ("next number", "following term", "next term", "coming value")},
    verbs={"say": ("say", "answer", "guess", "write")},
))
register_family(Family(
    name="rule_sorter", skill=SKILL, env_class=RuleSorterEnv,
    description="Infer a hidden acceptance rule from labelled examples and sort new objects by it.",
    own_knobs={"complexity": [1, 1, 2, 3], "examples": [8, 6, 6, 5], "items": [3, 3, 4, 6],
               "turns": [10, 10, 10, 10]},
    extend={"examples": Extend(-1, 3), "items": Extend(1, 9)},
    phrases={"rule sorter": ("rule sorter", "sorting machine", "hidden rule", "classifier"),
             "example": ("example", "sample", "shown", "case"), "accepted": ("accepted", "kept", "approved", "in"),
             "rejected": ("rejected", "discarded", "refused", "out"), "unsorted": ("unsorted", "pending", "open", "waiting"),
             "item": ("item", "object", "piece", "thing"), "mistakes allowed": ("mistakes allowed", "errors left", "spare mistakes", "lives"),
             "the rule accepts": ("the rule accepts", "the machine keeps", "wanted are", "the rule wants")},
    verbs={"accept": ("accept", "keep", "approve", "admit"), "reject": ("reject", "discard", "refuse", "deny")},
))
register_family(Family(
    name="motif_fill", skill=SKILL, env_class=MotifFillEnv,
    description="Complete a row of symbols that repeats a hidden motif, some tiles smudged.",
    own_knobs={"period": [2, 3, 4, 5], "alphabet": [3, 3, 4, 6], "blanks": [2, 2, 3, 3],
               "noise": [0.0, 0.1, 0.2, 0.3], "turns": [8, 8, 8, 8]},
    extend={"period": Extend(1, 7), "blanks": Extend(1, 6), "noise": Extend(0.1, 0.5)},
    phrases={"motif fill": ("motif fill", "tile pattern", "mosaic", "symbol row"),
             "row": ("row", "strip", "line", "band"), "smudged": ("smudged", "hidden", "dirty", "blurred"),
             "tiles to fill": ("tiles to fill", "blanks left", "gaps", "open tiles"), "tile": ("tile", "square", "cell", "slot"),
             "mistakes allowed": ("mistakes allowed", "errors left", "spare mistakes", "lives"),
             "fits": ("fits", "is right", "matches", "belongs")},
    verbs={"place": ("place", "put", "lay", "add")},
))
