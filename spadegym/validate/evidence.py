"""The probe plan: what the gate plays in the sandbox for one environment.

All probes run together in lockstep on separate fresh workers:

- main: reset(s0) with valid actions and hint, solution() and its play, reset(s0)
  again (replay), reset(s1) and solution() (a second instance for the leak
  checks), then each garbage action and one repeated action from reset(s0);
- twin: the same first play as main (solution play, else random episode 0) in
  another fresh worker, and reset(s1) with solution(), for the determinism
  check; then each action that
  valid_actions() lists after reset(s0), one per episode (the menu sweep);
- random: ``random_episodes`` uniform-random episodes spread over ``random_workers``.

A tool-use environment (one with ``get_tools``) also answers get_tools() in the
main probe (after reset(s1)), and every play sends tool-call actions to ``execute_tool`` as the rollout does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..envfile.contract import OptionalMethods
from ..sandbox import EnvHandle, Outcome, Sandbox
from .config import ValidationConfig
from .probes import (
    GARBAGE_ACTIONS,
    REPEATED_ACTION,
    Probe,
    Request,
    Trace,
    move,
    play,
    random_episode_rng,
    run_lockstep,
    scripted,
    uniform,
)

# Longest solution the gate plays; longer lists are cut (solution_fits_max_turns reports them).
_MAX_SOLUTION_STEPS = 500
# Most listed actions the menu sweep tries.
_MAX_SWEEP = 24


@dataclass
class Seeds:
    """The instance seeds a verdict uses, all derived from ``ValidationConfig.seed``."""

    base: int

    @property
    def first(self) -> int:
        return self.base + 1

    @property
    def second(self) -> int:
        return self.base + 2

    def random_episode(self, i: int) -> int:
        return self.base + 100 + i


@dataclass
class Evidence(OptionalMethods):
    """Everything the probes saw; the runtime and quality checks only read this."""

    seeds: Seeds
    load: Outcome
    methods: list[str] = field(default_factory=list)
    declared_max_turns: int | None = None
    turn_budget: int = 25
    first: Trace | None = None                 # reset(s0) [+ the solution's play]
    solution: Outcome | None = None            # solution() right after reset(s0)
    replay: Outcome | None = None              # reset(s0) again after playing
    other_reset: Outcome | None = None         # reset(s1)
    other_solution: Outcome | None = None      # solution() after reset(s1)
    twin: Trace | None = None                  # the first play again, in a fresh worker
    twin_solution: Outcome | None = None
    twin_other_reset: Outcome | None = None    # reset(s1) in the twin worker
    twin_other_solution: Outcome | None = None
    garbage: list[Trace] = field(default_factory=list)
    sweep: list[Trace] = field(default_factory=list)  # one listed action each, from reset(s0)
    repeated: Trace | None = None
    random: list[Trace] = field(default_factory=list)
    tools: Outcome | None = None               # get_tools() after reset(s1), in tool-use environments

    @property
    def solution_actions(self) -> list[str] | None:
        out = self.solution
        return out.value if out is not None and out.ok and isinstance(out.value, list) else None

    def all_traces(self) -> list[Trace]:
        found = [self.first, self.twin, *self.garbage, self.repeated, *self.sweep, *self.random]
        return [t for t in found if t is not None]


def _solution_play(handle: EnvHandle, seed: int, tools: bool,
                   keep: Callable[[Trace, Outcome | None], None]) -> Generator[Request, Outcome, None]:
    """reset(seed), solution(), then the solution's actions until the episode ends.

    ``keep`` gets the trace as soon as it exists (and again with the solution), so
    a probe stopped mid-play (a timeout elsewhere) still leaves what it saw.
    """
    trace = Trace(seed, (yield handle, "reset", {"seed": seed, "want": ["valid_actions", "hint"]}))
    keep(trace, None)
    if not trace.reset.ok:
        return
    solution = yield handle, "call", {"method": "solution", "args": []}
    keep(trace, solution)
    if solution.ok:
        for action in solution.value[:_MAX_SOLUTION_STEPS]:
            out = yield move(handle, action, [], tools)
            trace.actions.append(action)
            trace.steps.append(out)
            if not out.ok or out.value["terminated"] or out.value["truncated"]:
                break


def _main_probe(evidence: Evidence, handle: EnvHandle, config: ValidationConfig) -> Probe:
    seeds = evidence.seeds
    if evidence.has_solution:
        def keep(trace: Trace, solution: Outcome | None) -> None:
            evidence.first, evidence.solution = trace, solution
        yield from _solution_play(handle, seeds.first, evidence.has_tools, keep)
    else:
        evidence.first = Trace(seeds.first, (yield handle, "reset",
                                       {"seed": seeds.first, "want": ["valid_actions", "hint"]}))
    if not evidence.first.reset.ok:
        return
    if evidence.first.failure is None:  # replay in the same worker, which a failure would have replaced
        evidence.replay = yield handle, "reset", {"seed": seeds.first, "want": []}
    evidence.other_reset = yield handle, "reset", {"seed": seeds.second, "want": ["valid_actions"]}
    if evidence.has_solution and evidence.other_reset.ok:
        evidence.other_solution = yield handle, "call", {"method": "solution", "args": []}
    if evidence.has_tools and evidence.other_reset.ok:  # after a reset: a worker lost to a failed play is replaced
        evidence.tools = yield handle, "call", {"method": "get_tools", "args": []}
    for action in GARBAGE_ACTIONS:
        evidence.garbage.append((yield from play(handle, seeds.first, scripted([action]), 1, tools=evidence.has_tools)))
    evidence.repeated = yield from play(handle, seeds.first, scripted([REPEATED_ACTION]),
                                  min(config.repeat_steps, evidence.turn_budget), tools=evidence.has_tools)


def _twin_probe(evidence: Evidence, handle: EnvHandle, config: ValidationConfig) -> Probe:
    if evidence.has_solution:
        def keep(trace: Trace, solution: Outcome | None) -> None:
            evidence.twin, evidence.twin_solution = trace, solution
        yield from _solution_play(handle, evidence.seeds.first, evidence.has_tools, keep)
    else:
        evidence.twin = yield from _random_play(evidence, handle, config, 0)
    evidence.twin_other_reset = yield handle, "reset", {"seed": evidence.seeds.second, "want": ["valid_actions"]}
    if evidence.has_solution and evidence.twin_other_reset.ok:
        evidence.twin_other_solution = yield handle, "call", {"method": "solution", "args": []}
    menu = evidence.twin.reset.value.get("valid_actions") if evidence.twin.reset.ok else None
    for action in (menu or [])[:_MAX_SWEEP]:
        evidence.sweep.append((yield from play(handle, evidence.seeds.first, scripted([action]), 1, tools=evidence.has_tools)))


def _random_play(evidence: Evidence, handle: EnvHandle, config: ValidationConfig, i: int) -> Probe:
    policy = uniform(random_episode_rng(config.seed, i))
    return (yield from play(handle, evidence.seeds.random_episode(i), policy, evidence.turn_budget, tools=evidence.has_tools))


def _random_probe(evidence: Evidence, handle: EnvHandle, config: ValidationConfig, episodes: range) -> Probe:
    for i in episodes:
        evidence.random.append((yield from _random_play(evidence, handle, config, i)))


def _open_handles(sandbox: Sandbox, source: str, filename: str, count: int, deadline: float) -> list[EnvHandle]:
    """Fresh workers loading the file; threads overlap the loads (the sandbox's spawn lock orders forks)."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: sandbox.open(source, filename, deadline=deadline), range(count)))


def gather_evidence(sandbox: Sandbox, source: str, filename: str, config: ValidationConfig) -> Evidence:
    """Load the environment and run every probe; infrastructure failures end up in the traces."""
    evidence = Evidence(Seeds(config.seed), load=Outcome("ok"))
    workers = min(config.random_workers, config.random_episodes)
    # One budget for the whole verdict: no request of any probe outlives it.
    deadline = time.perf_counter() + config.verdict_budget_s
    handles = _open_handles(sandbox, source, filename, workers + 2, deadline)
    main, twin, randoms = handles[0], handles[1], handles[2:]
    try:
        evidence.load = main.loaded
        if not main.loaded.ok:
            return evidence
        evidence.methods = list(main.info.get("methods", []))
        evidence.declared_max_turns = main.info.get("max_turns")
        evidence.turn_budget = evidence.declared_max_turns or config.max_turns
        probes: list[Probe] = [_main_probe(evidence, main, config), _twin_probe(evidence, twin, config)]
        probes += [_random_probe(evidence, h, config, range(k, config.random_episodes, workers))
                   for k, h in enumerate(randoms)]
        # A timeout already decides the verdict; waiting out more of them would only cost time.
        run_lockstep(probes, stop_on={"timeout"})
        evidence.random.sort(key=lambda t: t.seed)
        return evidence
    finally:
        for h in handles:
            h.close()
