"""Measure a rendered family file in the sandbox: does its solution win, how often
does random play win, how much does following the hint help?

These are the figures that place a level on the difficulty scale; the tests and
``benchmarks/family_calibration.py`` use them. Many instances run pipelined, one
worker each, so a few hundred episodes take about a second.
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass

from ..envfile import episode_return, is_success
from ..sandbox import EnvHandle, Sandbox, gather

#: The policies ``play`` knows: uniform over valid actions, the file's own
#: solution, or the action the hint names (most of its words in the hint, in order).
POLICIES = ("random", "solution", "hint")
_WORDS = re.compile(r"[a-z0-9]+")


@dataclass
class PlayStats:
    policy: str
    episodes: int
    wins: int
    failures: list[str]  # sandbox failure messages (none expected for built-ins)

    @property
    def win_rate(self) -> float:
        return self.wins / self.episodes if self.episodes else 0.0


def play(sandbox: Sandbox, source: str, seeds: list[int], policy: str = "random",
         parallel: int = 8, rng_seed: int = 0) -> PlayStats:
    """Play one episode per seed with ``policy`` (pipelined over ``parallel`` workers)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    rng = random.Random(rng_seed)
    handles = [sandbox.open(source, "family.py") for _ in range(min(parallel, len(seeds)))]
    stats = PlayStats(policy, 0, 0, [])
    try:
        for h in handles:
            if not h.loaded.ok:
                stats.failures.append(f"load: {h.loaded.message}")
                return stats
        for start in range(0, len(seeds), len(handles)):
            batch = list(zip(handles, seeds[start:start + len(handles)]))
            for won in _play_batch(batch, policy, rng, stats):
                stats.episodes += 1
                stats.wins += won
    finally:
        for h in handles:
            h.close()
    return stats


def _choose(value: dict, policy: str, plan: list[str], rng: random.Random) -> str:
    actions = value.get("valid_actions") or ["noop"]
    if policy == "solution":
        return plan.pop(0) if plan else actions[0]
    if policy == "hint":
        return hinted_action(value.get("hint") or "", actions)
    return rng.choice(actions)


def hinted_action(hint: str, actions: list[str]) -> str:
    """The action whose words the hint covers best (ties: the one whose words keep their order).

    Roughly what a word-overlap learner can read from the ``hint:`` line.
    """
    said = _WORDS.findall(hint.lower())
    present = set(said)

    def score(action: str) -> tuple[float, float]:
        words = _WORDS.findall(action.lower())
        share = sum(w in present for w in words) / max(1, len(words))
        return share, difflib.SequenceMatcher(None, said, words).ratio()

    return max(actions, key=score)


def _play_batch(batch: list[tuple[EnvHandle, int]], policy: str, rng: random.Random,
                stats: PlayStats) -> list[bool]:
    want = ["valid_actions", "hint"]
    outs = gather([h.submit("reset", seed=s, want=want) for h, s in batch])
    plans: list[list[str]] = [[] for _ in batch]
    if policy == "solution":
        sols = gather([h.submit("call", method="solution", args=[]) for h, _ in batch])
        plans = [list(o.value) if o.ok else [] for o in sols]
    live = {}
    for i, out in enumerate(outs):
        if out.ok:
            live[i] = out.value
        else:
            stats.failures.append(f"reset: {out.message}")
    won = [False] * len(batch)
    for _ in range(500):  # built-ins end by their own turn budget; this only guards a broken file
        if not live:
            break
        order = list(live)
        actions = [_choose(live[i], policy, plans[i], rng) for i in order]
        steps = gather([batch[i][0].submit("step", action=a, want=want) for i, a in zip(order, actions)])
        for i, out in zip(order, steps):
            if not out.ok:
                stats.failures.append(f"step: {out.message}")
                del live[i]
                continue
            v = out.value
            if v["terminated"] or v["truncated"]:
                won[i] = is_success(episode_return(v["reward"], v["terminated"]))
                del live[i]
            else:
                live[i] = v
    return won
