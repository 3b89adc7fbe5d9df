"""Behaviour twins: probe plays in the sandbox tell a reworded copy of a level from a new level."""

from __future__ import annotations

import asyncio

import pytest

from spadegym.level import Level
from spadegym.sandbox import Sandbox
from spadegym.watch import Watch, WatchConfig

GAME = '''import random

SKILL = "Spatial Reasoning"


class {name}Env:
    max_turns = {turns}

    def reset(self, seed=None):
        self.rng = random.Random("{salt}:%s" % seed)
        self.pos, self.goal, self.turn, self.done = 0, self.rng.randint(2, 4), 0, False
        return self.show("{start}"), {{}}

    def show(self, event):
        return "{where}: %d\\n{aim}: %d\\n{news}: %s" % (self.pos, self.goal, event)

    def valid_actions(self):
        return [] if self.done else ["{fwd}", "{back}", "{wait}"]

    def step(self, action):
        self.turn += 1
        self.pos += {{"{fwd}": 1, "{back}": -1}}.get(action, 0)
        won = self.pos == self.goal
        self.done = won or self.turn >= self.max_turns
        return self.show("{moved}"), 1.0 if won else 0.0, won, self.done and not won, {{}}
'''
WORDS = dict(start="you stand still", where="position", aim="goal", news="event", fwd="step forward",
             back="step back", wait="wait", moved="you moved")
REWORDED = dict(start="the rover idles", where="rover at", aim="beacon at", news="log", fwd="drive ahead",
                back="reverse", wait="idle", moved="the wheels turned")

OTHER = '''import random

SKILL = "Logical Deduction"


class OtherEnv:
    max_turns = 3

    def reset(self, seed=None):
        self.secret, self.turn, self.done = random.Random(seed).randrange(6), 0, False
        return "guess the hidden number\\ntries left: 3\\nlast: none\\nhint lines: none\\nmode: plain", {}

    def valid_actions(self):
        return [] if self.done else [f"guess {i}" for i in range(6)]

    def step(self, action):
        self.turn += 1
        won = action == f"guess {self.secret}"
        self.done = won or self.turn >= 3
        return f"guess the hidden number\\ntries left: {3 - self.turn}\\nlast: {action}", float(won), won, self.done and not won, {}
'''


@pytest.fixture(scope="module")
def box():
    with Sandbox() as sandbox:
        yield sandbox


def observe(watch: Watch, box: Sandbox, round_: int, new: dict[str, str], pool: dict[str, str]) -> None:
    specs = {k: Level(source=v) for k, v in new.items()}
    probes = asyncio.run(watch.probe(box, specs, list(new), []))
    watch.observe(round_, [], probes, dict.fromkeys(new, "d"), {**pool, **new}, {})


def test_a_reworded_copy_is_a_cosmetic_twin_and_a_knob_change_is_not(box):
    original = GAME.format(name="Walk", turns=6, salt="walk", **WORDS)
    watch = Watch(WatchConfig(probe_seeds=4))
    observe(watch, box, 0, {"original": original, "other": OTHER}, {})
    copy = GAME.format(name="Rover", turns=6, salt="rover", **REWORDED)  # new words, new instances, same game
    longer = GAME.format(name="Walk", turns=9, salt="walk", **WORDS)  # the same text but a knob: more turns
    observe(watch, box, 1, {"copy": copy, "longer": longer}, {"original": original, "other": OTHER})
    twin = watch.levels["copy"]
    assert twin.twin == "original" and twin.twin_behaviour >= 0.9
    assert twin.findings() == ["cosmetic"]
    assert "cosmetic" not in watch.levels["longer"].findings()
    assert watch.levels["other"].twin in (None, "original") and "cosmetic" not in watch.levels["other"].findings()
    assert watch.levels["original"].probe_plays == 8  # two probe policies at four seeds


def test_the_probe_policies_also_play_where_every_play_of_a_round_ended_alike(box):
    from spadegym.rollout import Episode

    watch = Watch(WatchConfig(probe_seeds=2))
    walk = GAME.format(name="Walk", turns=6, salt="walk", **WORDS)
    specs = {"walk": Level(source=walk), "other": Level(source=OTHER)}
    won_all = [Episode("walk", 11, hinted=h, ret=1.0) for h in (False, True) for _ in range(4)]
    mixed = [Episode("walk", 12, hinted=False, ret=float(i % 2)) for i in range(4)]
    probes = asyncio.run(watch.probe(box, specs, ["other"], won_all + mixed))
    assert sorted({(e.env_id, e.seed) for e in probes}) == sorted(
        [("walk", 11)] + [("other", s) for s in watch.seeds])  # not seed 12: its plays already differ
    assert all(not e.hinted for e in probes) and len(probes) == 2 * 3
