"""Workers that host several episodes of one file (``EnvHandle.share``): the same episodes, fewer wake-ups.

Each episode keeps its own instance, module namespace and module-level ``random``; every request keeps
its own time limit from when the worker starts on it; a shared worker has the memory and CPU limits of
as many workers as it hosts instances; what ends the worker ends the episodes it hosts, each failing
with the category of what ended it. A process shares more than that (other modules' attributes, the
decimal context, its neighbours' objects), so a worker is shared only among episodes of a file that
``sandbox.sharing`` vouches for: a built-in family's rendering, which every family is tested here to
play the same shared or alone; any other file, the hostile fixtures included, gets a worker per
episode. The tests of the mechanism itself vouch for their own file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spadegym.agents import RandomAgent
from spadegym.families import DIMENSIONS, list_families, rendered_level, rendering_family
from spadegym.level import Level
from spadegym.rollout import HandlePool, Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox, SandboxConfig, protocol, sharing

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile"

# Module-level state and module-level random, the two things episodes sharing a process could mix up.
DICE = '''
import random
from random import choice

ROLLS = []


class DiceEnv:
    def reset(self, seed=None):
        ROLLS.clear()
        return f"start {random.random():.9f}", {}

    def valid_actions(self):
        return ["roll", "pick", "slow"]

    def step(self, action):
        if action == "slow":
            __import__("time").sleep(0.25)
        ROLLS.append(random.randint(0, 10**6) if action != "pick" else choice("abcdefgh"))
        return f"{action} {ROLLS}", float(len(ROLLS) == 4), len(ROLLS) >= 4, False, {}
'''

HANGS_ON_ASK = '''
class HangEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        while action == "hang":
            pass
        return "fine", 0.0, False, False, {}
'''


@pytest.fixture
def vouched():
    """The mechanism's tests share workers among episodes of their own two files (the rule's tests do not)."""
    with sharing.vouched(lambda source: source in (DICE, HANGS_ON_ASK)):
        yield


def trace(handles, moves: list[str]) -> list[list[str]]:
    """Observations of one episode per handle (seeds 0, 1, ...), each move sent to all of them in one round."""
    sandbox = handles[0].sandbox
    seen = [[o.value["observation"]] for o in sandbox.gather([h.submit("reset", seed=i) for i, h in enumerate(handles)])]
    for move in moves:
        for obs, outcome in zip(seen, sandbox.gather([h.submit("step", action=move) for h in handles])):
            assert outcome.ok, outcome.message
            obs.append(outcome.value["observation"])
    return seen


def test_episodes_sharing_a_worker_play_what_workers_of_their_own_would(sandbox: Sandbox, vouched: None) -> None:
    shared = [sandbox.open(DICE, "dice.py", share=4) for _ in range(4)]
    alone = [sandbox.open(DICE, "dice.py") for _ in range(4)]
    try:
        assert all(h.loaded.ok for h in shared + alone)
        assert len({h.worker.pid for h in shared}) == 1 and [h.slot for h in shared] == [0, 1, 2, 3]
        assert len({h.worker.pid for h in alone}) == 4
        moves = ["roll", "pick", "roll", "roll"]
        together = trace(shared, moves)
        assert together == trace(alone, moves)
        assert len({obs[-1] for obs in together}) == 4  # seeds differ, and so do the rolls
        assert together == trace(shared, moves)  # and a second episode in the same slots again
    finally:
        for h in shared + alone:
            h.close()



def test_a_file_whose_shared_workers_ended_leaves_the_sandbox(sandbox: Sandbox) -> None:
    """A long run plays new levels every round: the sandbox keeps no dead worker, nor its file, for a level
    it no longer plays."""
    for variant in range(3):
        source = DICE + f"\n# variant {variant}\n"  # one new file a round
        with sharing.vouched(lambda text, source=source: text == source):
            handles = [sandbox.open(source, "dice.py", share=2) for _ in range(3)]  # two workers: 2 slots, then 1
        assert all(h.loaded.ok for h in handles) and len({h.worker.pid for h in handles}) == 2
        workers = {h.worker for h in handles}
        for h in handles:
            h.close()
        assert not any(key[0] == source for key in sandbox._sharing)
        assert not workers & (set(sandbox._tenancy) | sandbox._workers)

def test_each_request_has_its_own_time_limit_from_when_the_worker_starts_on_it(vouched: None) -> None:
    with Sandbox(SandboxConfig(step_timeout_s=1.0)) as box:
        handles = [box.open(DICE, "dice.py", share=5) for _ in range(5)]
        box.gather([h.submit("reset", seed=0) for h in handles])
        outcomes = box.gather([h.submit("step", action="slow") for h in handles])  # 1.25 s in all, 0.25 s each
        assert [o.status for o in outcomes] == [protocol.OK] * 5


def test_what_ends_a_shared_worker_ends_its_episodes_each_with_its_cause(vouched: None) -> None:
    with Sandbox(SandboxConfig(step_timeout_s=1.0)) as box:
        hangs, waits = (box.open(HANGS_ON_ASK, "hang.py", share=2) for _ in range(2))
        box.gather([hangs.submit("reset", seed=0), waits.submit("reset", seed=0)])
        first = hangs.worker
        timed_out, ended = box.gather([hangs.submit("step", action="hang"), waits.submit("step", action="go")])
        assert timed_out.status == protocol.TIMEOUT
        assert ended.status == protocol.TIMEOUT and "another of its episodes failed" in ended.message
        assert "did not answer" in ended.message and not first.alive
        again = waits.reset(seed=1)  # a new worker reloads the file
        assert again.ok and waits.worker is not first and waits.step("go").ok


def test_a_shared_worker_has_the_memory_and_cpu_limits_of_one_worker_per_instance(vouched: None) -> None:
    config = SandboxConfig(memory_mb=256, cpu_seconds=20)
    with Sandbox(config) as box:
        shared = [box.open(DICE, "dice.py", share=4) for _ in range(4)]
        alone = box.open(DICE, "dice.py")
        assert all(h.loaded.ok for h in (*shared, alone))  # loaded: each worker has set its own limits
        limits = {h.worker.pid: Path(f"/proc/{h.worker.pid}/limits").read_text() for h in (shared[0], alone)}
    address, cpu = "Max address space", "Max cpu time"
    row = {pid: {line[:25].strip(): line[26:].split()[0] for line in text.splitlines()[1:]}
           for pid, text in limits.items()}
    assert row[shared[0].worker.pid][address] == str(4 * 256 << 20) and row[shared[0].worker.pid][cpu] == "80"
    assert row[alone.worker.pid][address] == str(256 << 20) and row[alone.worker.pid][cpu] == "20"


def play(levels: dict[str, Level], plays: int, per_worker: int) -> tuple[list[tuple], int]:
    """Every level's episodes (seeds 0 .. plays-1, random play) and how many workers served them."""
    with Sandbox(SandboxConfig(episodes_per_worker=per_worker)) as box:
        pool = HandlePool(box)
        schedule = [Play(e, s, group=s) for e in levels for s in range(plays)]
        episodes = asyncio.run(run_episodes(box, levels, schedule, RandomAgent(seed=3),
                                            RolloutConfig(concurrency=256, max_turns=12), handles=pool))
        workers = len({id(h.worker) for h in pool.all})
        pool.close()
    return [(ep.env_id, ep.seed, ep.ret, ep.failure, [(t.observation, t.action) for t in ep.turns],
             ep.final_observation) for ep in episodes], workers


def varied(family, i: int) -> dict:
    """The family's hardest knobs (its extension's end) with every variation dimension off its default."""
    knobs = family.level_knobs(family.max_extended_level)
    for j, dim in enumerate(DIMENSIONS):
        if len(dim.choices) > 1:
            knobs[dim.name] = dim.choices[1 + (i + j) % (len(dim.choices) - 1)]
    return knobs


def test_every_family_plays_the_same_episodes_with_shared_workers_as_without() -> None:
    levels = {}
    for i, f in enumerate(list_families()):  # each family as listed (easiest) and varied in every dimension (hardest)
        levels[f.name] = Level(f.render(f.level_knobs(0)))
        levels[f"{f.name}-varied"] = Level(f.render(varied(f, i)))
    assert all(rendering_family(level.source) == name.removesuffix("-varied") for name, level in levels.items())
    (alone, workers_alone), (shared, workers_shared) = play(levels, 2, 1), play(levels, 2, 8)
    assert shared == alone
    assert workers_alone == 2 * len(levels) and workers_shared == len(levels)  # they really shared
    assert any(ep[2] > 0 for ep in alone) and all(ep[4] and ep[3] is None for ep in alone)


@pytest.mark.parametrize("name", sorted(p.stem for p in HOSTILE.glob("*.py")))
def test_a_file_no_family_rendered_gets_a_worker_per_episode(name: str) -> None:
    source = (HOSTILE / f"{name}.py").read_text()
    assert not sharing.may_share(source)
    family = list_families()[0]
    rendered = family.render(family.level_knobs(0))
    assert not sharing.may_share(rendered + "\n" + source)  # a family's code with anything added is not its own
    assert rendered_level(rendered) == (family.name, family.level_knobs(0))
    assert rendered_level(rendered + "\n" + source) is None and rendered_level(source) is None


def test_files_that_read_what_a_process_shares_play_the_same_as_in_workers_of_their_own() -> None:
    """The decimal context and a library class's attributes: shared, these files played differently."""
    levels = {name: Level((HOSTILE / f"{name}.py").read_text()) for name in ("shared_decimal_context", "shared_neighbours")}
    (alone, _), (shared, workers) = play(levels, 8, 1), play(levels, 8, 8)
    assert shared == alone and workers == 16
    assert sum(ep[2] for ep in alone if ep[0] == "shared_neighbours") <= 1  # no free wins


def test_the_sandbox_gives_a_file_no_check_vouches_for_a_worker_of_its_own(sandbox: Sandbox) -> None:
    first, second = (sandbox.open(DICE, "dice.py", share=8) for _ in range(2))  # the caller asks; the rule decides
    try:
        assert first.share == second.share == 1 and first.worker is not second.worker
    finally:
        first.close()
        second.close()
