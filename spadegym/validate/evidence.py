"""The probe plan: what the gate plays in the sandbox for one environment.

All probes run together in lockstep on separate fresh workers:

- main: reset(s0) with valid actions and hint, solution() and its play (a
  text solution that does not win is played again as each sequence
  ``reference.solution_sequences`` reads from it), reset(s0) again (replay),
  reset(s1) and solution() (a second instance for the leak checks), then each
  garbage action and one repeated action from reset(s0);
- twin: the same first play as main (solution play, else random episode 0) in
  another fresh worker, and reset(s1) with solution(), for the determinism
  check; then each action that
  valid_actions() lists after reset(s0), one per episode (the menu sweep);
- random: ``random_episodes`` uniform-random episodes spread over ``random_workers``.

A tool-use environment (one with ``get_tools``) also answers get_tools() in the
main probe (after reset(s1)), and every play sends tool-call actions to ``execute_tool`` as the rollout does.

Every action goes through the worker's ``step``, which delivers it in the form
the file expects (``contract.deliver_action``), exactly as an agent's action.
Solution items are first reduced as an agent's reply is (``contract.reduce_action``).
Files without ``valid_actions()`` are probed with the actions their
observations list (``probes.menu_of``), when they list any.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..envfile import is_success
from ..envfile.contract import PLAIN, reduce_action
from ..envfile.reference import is_prose, solution_sequences
from ..sandbox import EnvHandle, Outcome, Sandbox
from .config import ValidationConfig
from .probes import (
    GARBAGE_ACTIONS,
    REPEATED_ACTION,
    Probe,
    Request,
    Trace,
    menu_of,
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
class Evidence:
    """Everything the probes saw; the runtime and quality checks only read this."""

    seeds: Seeds
    load: Outcome
    methods: list[str] = field(default_factory=list)
    action_format: str = PLAIN                 # how the worker delivers actions to step
    menu_source: str | None = None             # "valid_actions", "observation", or None (generic answers)
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
    sequences: list[Trace] = field(default_factory=list)  # a text solution read as sequences, from reset(s0)

    @property
    def has_tools(self) -> bool:
        return "get_tools" in self.methods

    @property
    def has_solution(self) -> bool:
        return "solution" in self.methods

    @property
    def has_valid_actions(self) -> bool:
        return "valid_actions" in self.methods

    @property
    def raw_solution(self) -> list[str] | None:
        """What solution() returned after reset(s0) (a text is a list of one)."""
        out = self.solution
        return out.value if out is not None and out.ok and isinstance(out.value, list) else None

    @property
    def solution_actions(self) -> list[str] | None:
        """solution() as the actions the gate plays: each item reduced as an agent's reply is."""
        raw = self.raw_solution
        return None if raw is None else [reduce_action(a) for a in raw]

    @property
    def solution_is_text(self) -> bool:
        """solution() returned one text that reads as a plan (the reference's prose), not a list of actions."""
        raw = self.raw_solution
        return raw is not None and len(raw) == 1 and is_prose(raw[0])

    @property
    def solution_boxed(self) -> bool:
        """Some solution() item holds a \\boxed{} (which the gate strips, as from an agent's reply)."""
        return any("\\boxed" in a for a in self.raw_solution or [])

    @property
    def winning_sequence(self) -> Trace | None:
        """The first reading of a text solution that won, if the text itself did not."""
        return next((t for t in self.sequences if t.failure is None and t.ended and is_success(t.ret)), None)

    @property
    def informed(self) -> bool:
        """Some probe knew real actions: listed ones, or a solution that was played as actions."""
        return self.menu_source is not None or (self.has_solution and not self.solution_is_text) \
            or self.winning_sequence is not None

    def all_traces(self) -> list[Trace]:
        found = [self.first, self.twin, *self.garbage, self.repeated, *self.sweep, *self.random, *self.sequences]
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
        yield from _play_actions(handle, trace, [reduce_action(a) for a in solution.value], tools)


def _play_actions(handle: EnvHandle, trace: Trace, actions: list[str], tools: bool) -> Probe:
    """Play ``actions`` after the reset ``trace`` holds, until the episode ends."""
    for action in actions[:_MAX_SOLUTION_STEPS]:
        out = yield move(handle, action, [], tools)
        trace.actions.append(action)
        trace.steps.append(out)
        if not out.ok or out.value["terminated"] or out.value["truncated"]:
            break


def _sequence_plays(ev: Evidence, handle: EnvHandle) -> Probe:
    """A text solution that did not win as one action: play each sequence read from it, until one wins."""
    assert ev.first is not None
    if not ev.solution_is_text or ev.first.failure is not None or (ev.first.ended and is_success(ev.first.ret)):
        return
    for actions in solution_sequences((ev.raw_solution or [""])[0]):
        trace = Trace(ev.seeds.first, (yield handle, "reset", {"seed": ev.seeds.first, "want": []}))
        ev.sequences.append(trace)
        if not trace.reset.ok:
            return
        yield from _play_actions(handle, trace, [reduce_action(a) for a in actions], ev.has_tools)
        if trace.failure is not None or (trace.ended and is_success(trace.ret)):
            return


def _main_probe(ev: Evidence, handle: EnvHandle, config: ValidationConfig) -> Probe:
    seeds = ev.seeds
    if ev.has_solution:
        def keep(trace: Trace, solution: Outcome | None) -> None:
            ev.first, ev.solution = trace, solution
        yield from _solution_play(handle, seeds.first, ev.has_tools, keep)
    else:
        ev.first = Trace(seeds.first, (yield handle, "reset",
                                       {"seed": seeds.first, "want": ["valid_actions", "hint"]}))
    if not ev.first.reset.ok:
        return
    if ev.has_valid_actions:
        ev.menu_source = "valid_actions"
    elif menu_of(ev.first.reset.value):
        ev.menu_source = "observation"
    yield from _sequence_plays(ev, handle)
    if ev.first.failure is None:  # replay in the same worker, which a failure would have replaced
        ev.replay = yield handle, "reset", {"seed": seeds.first, "want": []}
    ev.other_reset = yield handle, "reset", {"seed": seeds.second, "want": ["valid_actions"]}
    if ev.has_solution and ev.other_reset.ok:
        ev.other_solution = yield handle, "call", {"method": "solution", "args": []}
    if ev.has_tools and ev.other_reset.ok:  # after a reset: a worker lost to a failed play is replaced
        ev.tools = yield handle, "call", {"method": "get_tools", "args": []}
    for action in GARBAGE_ACTIONS:
        ev.garbage.append((yield from play(handle, seeds.first, scripted([action]), 1, tools=ev.has_tools)))
    ev.repeated = yield from play(handle, seeds.first, scripted([REPEATED_ACTION]),
                                  min(config.repeat_steps, ev.turn_budget), tools=ev.has_tools)


def _twin_probe(ev: Evidence, handle: EnvHandle, config: ValidationConfig) -> Probe:
    if ev.has_solution:
        def keep(trace: Trace, solution: Outcome | None) -> None:
            ev.twin, ev.twin_solution = trace, solution
        yield from _solution_play(handle, ev.seeds.first, ev.has_tools, keep)
    else:
        ev.twin = yield from _random_play(ev, handle, config, 0)
    ev.twin_other_reset = yield handle, "reset", {"seed": ev.seeds.second, "want": ["valid_actions"]}
    if ev.has_solution and ev.twin_other_reset.ok:
        ev.twin_other_solution = yield handle, "call", {"method": "solution", "args": []}
    menu = menu_of(ev.twin.reset.value) if ev.twin.reset.ok else None
    for action in (menu or [])[:_MAX_SWEEP]:
        ev.sweep.append((yield from play(handle, ev.seeds.first, scripted([action]), 1, tools=ev.has_tools)))


def _random_play(ev: Evidence, handle: EnvHandle, config: ValidationConfig, i: int) -> Probe:
    policy = uniform(random_episode_rng(config.seed, i))
    return (yield from play(handle, ev.seeds.random_episode(i), policy, ev.turn_budget, tools=ev.has_tools))


def _random_probe(ev: Evidence, handle: EnvHandle, config: ValidationConfig, episodes: range) -> Probe:
    for i in episodes:
        ev.random.append((yield from _random_play(ev, handle, config, i)))


def _open_handles(sandbox: Sandbox, source: str, filename: str, count: int, deadline: float) -> list[EnvHandle]:
    """Fresh workers loading the file; threads overlap the loads (the sandbox's spawn lock orders forks)."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: sandbox.open(source, filename, deadline=deadline), range(count)))


def gather_evidence(sandbox: Sandbox, source: str, filename: str, config: ValidationConfig) -> Evidence:
    """Load the environment and run every probe; infrastructure failures end up in the traces."""
    ev = Evidence(Seeds(config.seed), load=Outcome("ok"))
    workers = min(config.random_workers, config.random_episodes)
    # One budget for the whole verdict: no request of any probe outlives it.
    deadline = time.perf_counter() + config.verdict_budget_s
    handles = _open_handles(sandbox, source, filename, workers + 2, deadline)
    main, twin, randoms = handles[0], handles[1], handles[2:]
    try:
        ev.load = main.loaded
        if not main.loaded.ok:
            return ev
        ev.methods = list(main.info.get("methods", []))
        ev.action_format = main.info.get("action_format", PLAIN)
        ev.declared_max_turns = main.info.get("max_turns")
        ev.turn_budget = ev.declared_max_turns or config.max_turns
        probes: list[Probe] = [_main_probe(ev, main, config), _twin_probe(ev, twin, config)]
        probes += [_random_probe(ev, h, config, range(k, config.random_episodes, workers))
                   for k, h in enumerate(randoms)]
        # A timeout already decides the verdict; waiting out more of them would only cost time.
        run_lockstep(probes, stop_on={"timeout"})
        ev.random.sort(key=lambda t: t.seed)
        return ev
    finally:
        for h in handles:
            h.close()
