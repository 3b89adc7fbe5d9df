"""Causal Inference families: lamp wiring, device chain, garden causes.

Each class is rendered into a standalone file (see ``core``); it uses only
``self.knobs`` (the knob values), ``self.rng`` and the standard library.
"""

from __future__ import annotations

from .core import EpisodeCore
from .registry import Family, register_family
from .variation import Extend

SKILL = "Causal Inference"


class LampWiringEnv(EpisodeCore):
    """Switches toggle hidden sets of lamps; flip switches until the lamps match the target."""

    TITLE = "lamp wiring"

    def setup(self):
        n, m = self.knobs["switches"], self.knobs["lamps"]
        for attempt in range(1000):
            self.wires = [sorted(self.rng.sample(range(m), self.rng.randint(1, min(2, m)))) for _ in range(n)]
            self.lamps = [self.rng.random() < 0.5 for _ in range(m)]
            self.target = list(self.lamps)
            for s in self.rng.sample(range(n), min(n, self.knobs["depth"])):
                for lamp in self.wires[s]:
                    self.target[lamp] = not self.target[lamp]
            flips = self._fewest()
            # Few lamps cannot need many flips: after a while accept any target two flips away or more.
            if flips and (len(flips) == self.knobs["depth"] or (attempt >= 100 and len(flips) >= 2)):
                break
        self.known = set()

    def _fewest(self):
        # Toggles commute, so a solution is a set of switches: try the smallest sets first.
        n = len(self.wires)
        for mask in sorted(range(1 << n), key=lambda x: (bin(x).count("1"), x)):
            lamps = list(self.lamps)
            for s in range(n):
                if mask >> s & 1:
                    for lamp in self.wires[s]:
                        lamps[lamp] = not lamps[lamp]
            if lamps == self.target:
                return [s for s in range(n) if mask >> s & 1]
        return None

    @staticmethod
    def _show(lamps):
        return " ".join("on" if x else "off" for x in lamps)

    def observe(self):
        lines = [f"lamps: {self._show(self.lamps)}", f"target: {self._show(self.target)}"]
        for s in sorted(self.known):
            lines.append(f"switch {s + 1} toggles lamps {' and '.join(str(x + 1) for x in self.wires[s])}")
        return lines

    def actions(self):
        return [f"flip {s + 1}" for s in range(len(self.wires))]

    def apply(self, action):
        s = int(action.split()[1]) - 1
        before = sum(a == b for a, b in zip(self.lamps, self.target))
        for lamp in self.wires[s]:
            self.lamps[lamp] = not self.lamps[lamp]
        self.known.add(s)
        if self.lamps == self.target:
            return f"switch {s + 1} flipped; the lamps match the target", 1.0, "win"
        after = sum(a == b for a, b in zip(self.lamps, self.target))
        return f"switch {s + 1} flipped", (after - before) / len(self.lamps), None

    def policy(self):
        return f"flip {self._fewest()[0] + 1}"

    def advice(self):
        return f"{self.policy()} next: that switch is part of the fewest flips that reach the target"


class DeviceChainEnv(EpisodeCore):
    """Devices only work once their hidden cause has run; a wrong activation breaks the chain."""

    TITLE = "device chain"

    def budget(self):
        return self.knobs["length"] + self.knobs["slack"]

    def setup(self):
        self.chain = self.rng.sample(range(1, self.knobs["devices"] + 1), self.knobs["length"])
        self.powered = []
        self.failed = {}  # chain position -> devices that sputtered there (what a player has seen)
        self.longest = 0  # the longest prefix of the chain ever powered (what a player has seen run)

    def observe(self):
        on = ", ".join(f"device {d}" for d in self.powered) or "none"
        lines = [f"devices: {self.knobs['devices']}", f"powered: {on}",
                 f"chain length: {self.knobs['length']} devices end with the gate",
                 "chain found so far: " + (", ".join(f"device {d}" for d in self.chain[:self.longest]) or "none")]
        failed = self.failed.get(len(self.powered))
        if failed:
            lines.append("sputtered as the next device: " + ", ".join(f"device {d}" for d in sorted(failed)))
        return lines

    def actions(self):
        return [f"activate {d}" for d in range(1, self.knobs["devices"] + 1)]

    def apply(self, action):
        d = int(action.split()[1])
        if d in self.powered:
            return f"device {d} is already running", 0.0, None
        if d == self.chain[len(self.powered)]:
            self.powered.append(d)
            self.longest = max(self.longest, len(self.powered))
            if len(self.powered) == len(self.chain):
                return f"device {d} runs and the gate opens", 1.0, "win"
            return f"device {d} starts humming", 1.0 / len(self.chain), None
        self.failed.setdefault(len(self.powered), set()).add(d)
        broke = bool(self.powered) and self.knobs.get("strict", 1)
        self.powered = [] if broke else self.powered
        return f"device {d} sputters" + ("; the chain breaks and every device stops" if broke else ""), -1.0, None

    def policy(self):
        return f"activate {self.chain[len(self.powered)]}"

    def advice(self):
        # What a player who sees only what ran and what sputtered does: re-run the chain found so far,
        # then try the lowest device not yet seen to sputter in the next place.
        k = len(self.powered)
        if k < self.longest:
            d = self.chain[k]
            return f"device {d} is next in the chain found so far: activate device {d}"
        tried = self.failed.get(k, set())
        d = min(d for d in range(1, self.knobs["devices"] + 1) if d not in tried and d not in self.powered)
        return f"device {d} has not sputtered in the next place yet: activate device {d}"


class GardenCausesEnv(EpisodeCore):
    """A plant grows only under a hidden combination of conditions; find it and let it grow."""

    TITLE = "garden causes"
    FACTORS = ["water", "light", "compost", "music", "shade", "wind"]

    def budget(self):
        return self.knobs["factors"] + self.knobs["growth"] + self.knobs["slack"]

    def setup(self):
        names = self.FACTORS[: self.knobs["factors"]]
        needed = min(self.knobs["needed"], len(names))
        harmful = min(self.knobs["harmful"], len(names) - needed)
        picked = self.rng.sample(names, needed + harmful)
        self.needed, self.harmful = picked[:needed], picked[needed:]
        while True:
            self.on = {f: self.rng.random() < 0.5 for f in names}
            if not self._thrives():
                break
        self.height = 1

    def _thrives(self):
        return all(self.on[f] for f in self.needed) and not any(self.on[f] for f in self.harmful)

    def observe(self):
        lines = [f"plant height: {self.height} (goal {self.knobs['growth'] + 1})"]
        lines += [f"{f}: {'on' if v else 'off'}" for f, v in self.on.items()]
        return lines

    def actions(self):
        return [f"toggle {f}" for f in self.on] + ["wait"]

    def apply(self, action):
        if action == "wait":
            if self._thrives():
                self.height += 1
                if self.height > self.knobs["growth"]:
                    return "the plant grew and is in full bloom", 1.0, "win"
                return "the plant grew", 1.0, None
            self.height -= 1
            if self.height <= 0:
                return "the plant wilted and died", 0.0, "lose"
            return "the plant wilted", -1.0, None
        f = action.split()[1]
        self.on[f] = not self.on[f]
        return f"{f} is now {'on' if self.on[f] else 'off'}", 0.0, None

    def policy(self):
        for f in self.needed:
            if not self.on[f]:
                return f"toggle {f}"
        for f in self.harmful:
            if self.on[f]:
                return f"toggle {f}"
        return "wait"

    def advice(self):
        action = self.policy()
        if action == "wait":
            return "the conditions are right for growth: wait"
        f = action.split()[1]
        why = "helps the plant and is off" if f in self.needed else "harms the plant and is on"
        return f"{f} {why}: toggle {f}"


register_family(Family(
    name="lamp_wiring", skill=SKILL, env_class=LampWiringEnv,
    description="Work out which lamps each switch toggles and reach a target lamp pattern.",
    own_knobs={"switches": [5, 6, 7, 8], "lamps": [5, 5, 6, 6], "depth": [2, 3, 4, 4], "turns": [3, 5, 5, 6]},
    extend={"switches": Extend(1, 10), "lamps": Extend(1, 7), "depth": Extend(1, 5), "turns": Extend(1, 7)},
    phrases={"lamp wiring": ("lamp wiring", "light panel", "switchboard", "circuit puzzle"),
             "lamps": ("lamps", "lights", "bulbs", "lanterns"), "target": ("target", "goal", "wanted", "pattern"),
             "switch": ("switch", "lever", "breaker", "toggle"), "toggles": ("toggles", "controls", "changes", "drives"),
             "fewest flips": ("fewest flips", "shortest way", "least moves", "minimum changes")},
    verbs={"flip": ("flip", "pull", "throw", "press")},
))
register_family(Family(
    name="device_chain", skill=SKILL, env_class=DeviceChainEnv,
    description="Discover the hidden causal order of devices; a wrong activation breaks the chain.",
    own_knobs={"devices": [6, 6, 7, 8], "length": [2, 3, 3, 4], "slack": [4, 4, 4, 4]},
    extend={"devices": Extend(1, 10), "length": Extend(1, 6)},
    phrases={"device chain": ("device chain", "machine chain", "power relay", "gear train"),
             "powered": ("powered", "running", "on", "live"), "chain": ("chain", "sequence", "line", "relay"),
             "sputtered": ("sputtered", "failed", "stalled", "misfired"), "gate": ("gate", "door", "vault", "exit")},
    verbs={"activate": ("activate", "start", "power", "run"), "device": ("device", "machine", "unit", "engine")},
))
register_family(Family(
    name="garden_causes", skill=SKILL, env_class=GardenCausesEnv,
    description="Find which conditions make a plant grow and which stunt it, then grow it to full bloom.",
    own_knobs={"factors": [3, 3, 4, 5], "needed": [1, 1, 2, 2], "harmful": [0, 1, 1, 1],
               "growth": [2, 2, 2, 3], "slack": [4, 2, 1, 0]},
    extend={"factors": Extend(1, 6), "needed": Extend(1, 3), "harmful": Extend(1, 2), "growth": Extend(1, 5)},
    phrases={"garden causes": ("garden causes", "greenhouse", "plant lab", "grow room"),
             "plant height": ("plant height", "stem size", "growth", "height"), "goal": ("goal", "target", "aim", "wanted"),
             "full bloom": ("full bloom", "flowering", "peak", "maturity"), "wilted": ("wilted", "drooped", "shrank", "withered"),
             "helps the plant": ("helps the plant", "is needed", "is good", "feeds it"),
             "harms the plant": ("harms the plant", "is bad", "hurts it", "stunts it")},
    verbs={"toggle": ("toggle", "switch", "flip", "change"), "wait": ("wait", "rest", "idle", "pass")},
))
