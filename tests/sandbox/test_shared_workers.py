"""Workers that host several episodes of one file (``EnvHandle.share``): the same episodes, fewer wake-ups.

Each episode keeps its own instance, module namespace and module-level ``random``, so it plays what it
would in a worker of its own; every request keeps its own time limit from when the worker starts on it;
what ends the worker ends the episodes it hosts, and they say why.
"""

from __future__ import annotations

import asyncio

from spadegym.agents import RandomAgent
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox, SandboxConfig, protocol

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


def trace(handles, moves: list[str]) -> list[list[str]]:
    """Observations of one episode per handle (seeds 0, 1, ...), each move sent to all of them in one round."""
    sandbox = handles[0].sandbox
    seen = [[o.value["observation"]] for o in sandbox.gather([h.submit("reset", seed=i) for i, h in enumerate(handles)])]
    for move in moves:
        for obs, outcome in zip(seen, sandbox.gather([h.submit("step", action=move) for h in handles])):
            assert outcome.ok, outcome.message
            obs.append(outcome.value["observation"])
    return seen


def test_episodes_sharing_a_worker_play_what_workers_of_their_own_would(sandbox: Sandbox) -> None:
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


def test_each_request_has_its_own_time_limit_from_when_the_worker_starts_on_it() -> None:
    with Sandbox(SandboxConfig(step_timeout_s=1.0)) as box:
        handles = [box.open(DICE, "dice.py", share=5) for _ in range(5)]
        box.gather([h.submit("reset", seed=0) for h in handles])
        outcomes = box.gather([h.submit("step", action="slow") for h in handles])  # 1.25 s in all, 0.25 s each
        assert [o.status for o in outcomes] == [protocol.OK] * 5


def test_what_ends_a_shared_worker_ends_its_episodes_and_they_say_why() -> None:
    with Sandbox(SandboxConfig(step_timeout_s=1.0)) as box:
        hangs, waits = (box.open(HANGS_ON_ASK, "hang.py", share=2) for _ in range(2))
        box.gather([hangs.submit("reset", seed=0), waits.submit("reset", seed=0)])
        first = hangs.worker
        timed_out, ended = box.gather([hangs.submit("step", action="hang"), waits.submit("step", action="go")])
        assert timed_out.status == protocol.TIMEOUT
        assert ended.status == protocol.CRASH and "another of its episodes failed" in ended.message
        assert "did not answer" in ended.message and not first.alive
        again = waits.reset(seed=1)  # a new worker reloads the file
        assert again.ok and waits.worker is not first and waits.step("go").ok


def test_a_round_plays_the_same_episodes_with_shared_workers_as_without() -> None:
    envs = {"dice": Level(DICE)}
    plays = [Play("dice", seed, group=seed) for seed in range(6) for _ in range(4)]
    runs = []
    for per_worker in (1, 8):
        with Sandbox(SandboxConfig(episodes_per_worker=per_worker)) as box:
            episodes = asyncio.run(run_episodes(box, envs, plays, RandomAgent(seed=3), RolloutConfig(concurrency=24)))
            runs.append([(ep.ret, [(t.observation, t.action) for t in ep.turns]) for ep in episodes])
    assert runs[0] == runs[1]
    assert all(ep[1] for ep in runs[0]) and len({ep[1][0][0] for ep in runs[0]}) == 6
