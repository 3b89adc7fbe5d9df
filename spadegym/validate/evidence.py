"""The probe plan: what the gate plays in the sandbox for one environment.

All probes run together in lockstep, main and twin each on a fresh worker:

- main: reset(s0) with valid actions and hint, solution() and its play (a
  text solution that does not win is played again as each sequence
  ``reference.solution_sequences`` reads from it), reset(s0) again (replay),
  reset(s1) and solution() (a second instance for the leak checks), then each
  garbage action and one repeated action from reset(s0);
- twin: the same first play as main (solution play, else random episode 0) in
  another fresh worker, and reset(s1) with solution(), for the determinism
  check; then each action that
  valid_actions() lists after reset(s0), one per episode (the menu sweep);
- random: ``random_episodes`` uniform-random episodes, dealt in turn to
  ``random_workers`` fresh workers (at least one when the file has no
  solution(): its first episode is the reference of the determinism check,
  played in a fresh worker), then to the twin and the main worker, which play
  theirs after their own probes. Random episodes never needed a process of
  their own (each starts with a reset, several already shared a worker), and
  every worker the gate forks and loads costs more CPU than all its steps.

A tool-use environment (one with ``get_tools``) also answers get_tools() in the
main probe (after reset(s1)), and every play sends tool-call actions to ``execute_tool`` as the rollout does.
Without valid_actions(), its random play and menu sweep call the tools with arguments drawn from their
schemas (``tool_menu``); with it, they play the listed calls, as in any game. Either way the twin then
sends calls with mistyped and missing arguments and an unknown tool.

Every action goes through the worker's ``step``, which delivers it in the form
the file expects (``contract.deliver_action``), exactly as an agent's action.
Solution items are first reduced as an agent's reply is (``contract.reduce_action``).
Files without ``valid_actions()`` are probed with the actions their
observations list (``probes.menu_of``), when they list any.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from ..envfile import is_success, parse_tool_call
from ..envfile.contract import PLAIN, OptionalMethods, reduce_action
from ..envfile.reference import (
    ToolMethod,
    action_format,
    is_prose,
    solution_sequences,
    tool_methods,
    tool_plan,
)
from ..envfile.static import env_class, parse
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
from .tool_menu import bad_calls, tool_menu

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
    tool_methods: dict[str, ToolMethod] | None = None  # tool_<name> methods the base dispatches to (read statically)

    @property
    def raw_solution(self) -> list[str] | None:
        """What solution() returned after reset(s0) (a text is a list of one)."""
        out = self.solution
        return out.value if out is not None and out.ok and isinstance(out.value, list) else None

    @property
    def solution_actions(self) -> list[str] | None:
        """solution() as the actions the gate plays: each item reduced as an agent's reply is."""
        raw = self.raw_solution
        return None if raw is None else [reduce_action(a, self.has_tools) for a in raw]

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
    def played_solution(self) -> bool:
        """The gate played a solution as actions: a list of them, or a text read as a sequence that won."""
        return (self.has_solution and not self.solution_is_text) or self.winning_sequence is not None

    def all_traces(self) -> list[Trace]:
        found = [self.first, self.twin, *self.garbage, self.repeated, *self.sweep, *self.random, *self.sequences]
        return [t for t in found if t is not None]


def _solution_play(handle: EnvHandle, seed: int, tools: bool,
                   keep: Callable[[Trace, Outcome | None], None]) -> Generator[Request, Outcome, None]:
    """reset(seed), solution(), then the solution's actions until the episode ends.

    ``keep`` gets the trace as soon as it exists (and again with the solution), so
    a probe stopped mid-play (a timeout elsewhere) still leaves what it saw.
    """
    trace = Trace(seed, (yield handle, "reset", {"seed": seed, "want": ["valid_actions", "hint", "criteria"]}))
    keep(trace, None)
    if not trace.reset.ok:
        return
    solution = yield handle, "call", {"method": "solution", "args": []}
    keep(trace, solution)
    if solution.ok:
        yield from _play_actions(handle, trace, [reduce_action(a, tools) for a in solution.value], tools)


def _play_actions(handle: EnvHandle, trace: Trace, actions: list[str], tools: bool) -> Probe:
    """Play ``actions`` after the reset ``trace`` holds, until the episode ends."""
    for action in actions[:_MAX_SOLUTION_STEPS]:
        out = yield move(handle, action, [], tools)
        trace.actions.append(action)
        trace.steps.append(out)
        if not out.ok or out.value["terminated"] or out.value["truncated"]:
            break


def _sequence_plays(evidence: Evidence, handle: EnvHandle) -> Probe:
    """A text solution that did not win as one action: play each sequence read from it, until one wins.

    In a tool game the first reading is its plan in call notation (``reference.tool_plan``), read
    against the tools get_tools() lists for the instance.
    """
    assert evidence.first is not None
    if not evidence.solution_is_text or evidence.first.failure is not None or (evidence.first.ended and is_success(evidence.first.ret)):
        return
    text = (evidence.raw_solution or [""])[0]
    plan = None
    if evidence.has_tools:
        if not (yield handle, "reset", {"seed": evidence.seeds.first, "want": []}).ok:
            return
        tools = yield handle, "call", {"method": "get_tools", "args": []}
        plan = tool_plan(text, tools.value) if tools.ok else None
    for actions in [plan] * (plan is not None) + solution_sequences(text):
        trace = Trace(evidence.seeds.first, (yield handle, "reset", {"seed": evidence.seeds.first, "want": []}))
        evidence.sequences.append(trace)
        if not trace.reset.ok:
            return
        yield from _play_actions(handle, trace, [reduce_action(a, evidence.has_tools) for a in actions], evidence.has_tools)
        if trace.failure is not None or (trace.ended and is_success(trace.ret)):
            return


def _main_probe(evidence: Evidence, handle: EnvHandle, config: ValidationConfig) -> Probe:
    seeds = evidence.seeds
    if evidence.has_solution:
        def keep(trace: Trace, solution: Outcome | None) -> None:
            evidence.first, evidence.solution = trace, solution
        yield from _solution_play(handle, seeds.first, evidence.has_tools, keep)
    else:
        evidence.first = Trace(seeds.first, (yield handle, "reset",
                                       {"seed": seeds.first, "want": ["valid_actions", "hint", "criteria"]}))
    if not evidence.first.reset.ok:
        return
    if evidence.has_valid_actions:
        evidence.menu_source = "valid_actions"
    elif evidence.has_tools:
        evidence.menu_source = "tools"
    elif menu_of(evidence.first.reset.value):
        evidence.menu_source = "observation"
    yield from _sequence_plays(evidence, handle)
    if evidence.first.failure is None:  # replay in the same worker, which a failure would have replaced
        evidence.replay = yield handle, "reset", {"seed": seeds.first, "want": []}
    evidence.other_reset = yield handle, "reset", {"seed": seeds.second, "want": ["valid_actions", "criteria"]}
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
    evidence.twin_other_reset = yield handle, "reset", {"seed": evidence.seeds.second, "want": ["valid_actions", "criteria"]}
    if evidence.has_solution and evidence.twin_other_reset.ok:
        evidence.twin_other_solution = yield handle, "call", {"method": "solution", "args": []}
    menu = menu_of(evidence.twin.reset.value) if evidence.twin.reset.ok else None
    if evidence.has_tools and evidence.twin.reset.ok:
        yield from _tool_sweep(evidence, handle, menu)
        return
    for action in (menu or [])[:_MAX_SWEEP]:
        evidence.sweep.append((yield from play(handle, evidence.seeds.first, scripted([action]), 1, tools=evidence.has_tools)))


def _tool_sweep(evidence: Evidence, handle: EnvHandle, menu: list[str] | None) -> Probe:
    """In a tool game, each listed action (valid_actions()), or without a list each call of the tool menu
    drawn from the schemas, from reset(s0), one per episode (the menu sweep); then the calls an agent may
    send by mistake (wrong types, missing arguments, an unknown tool), which must get an answer, never a
    crash (kept with the malformed actions)."""
    if not (yield handle, "reset", {"seed": evidence.seeds.first, "want": []}).ok:
        return
    listed = yield handle, "call", {"method": "get_tools", "args": []}
    schemas = listed.value if listed.ok and isinstance(listed.value, list) else []
    first = [evidence.twin.first_observation] if evidence.twin is not None else []
    if not evidence.has_valid_actions:
        menu = [a for a in tool_menu(schemas, first) if parse_tool_call(a) is not None]
    for action in (menu or [])[:_MAX_SWEEP]:
        evidence.sweep.append((yield from play(handle, evidence.seeds.first, scripted([action]), 1, tools=True)))
    for action in bad_calls(schemas, limit=4 if evidence.has_valid_actions else 8):
        evidence.garbage.append((yield from play(handle, evidence.seeds.first, scripted([action]), 1, tools=True)))


def _random_play(evidence: Evidence, handle: EnvHandle, config: ValidationConfig, i: int) -> Probe:
    policy = uniform(random_episode_rng(config.seed, i))
    return (yield from play(handle, evidence.seeds.random_episode(i), policy, evidence.turn_budget,
                            tools=evidence.has_tools, tool_calls=evidence.has_tools and not evidence.has_valid_actions))


def _random_probe(evidence: Evidence, handle: EnvHandle, config: ValidationConfig, episodes: range) -> Probe:
    for i in episodes:
        evidence.random.append((yield from _random_play(evidence, handle, config, i)))


def _then(first: Probe, second: Probe) -> Probe:
    """One probe after the other on the same worker."""
    yield from first
    yield from second


def _open_handles(sandbox: Sandbox, source: str, filename: str, count: int, deadline: float) -> list[EnvHandle]:
    """Fresh workers loading the file, side by side (opening a handle does not wait for its load)."""
    return [sandbox.open(source, filename, deadline=deadline) for _ in range(count)]


def gather_evidence(sandbox: Sandbox, source: str, filename: str, config: ValidationConfig,
                    tree: ast.Module | None = None) -> Evidence:
    """Load the environment and run every probe; infrastructure failures end up in the traces.

    ``tree``: the file as the static section parsed it (read, never changed), else parsed here.
    """
    evidence = Evidence(Seeds(config.seed), load=Outcome("ok"))
    if tree is None:
        tree = parse(source, filename)  # the static section parsed it already: this cannot fail
    evidence.tool_methods = tool_methods(tree, env_class(tree))
    sandbox.start()  # the zygote's own start is not the environment's time
    sandbox.warm(source)  # nor are the slow trusted modules the file imports (imported once, by the zygote)
    # The zygote compiles the file once for both workers, told what the static section read from it.
    sandbox.prepare(source, filename, env_class(tree).name, action_format(source, filename, tree))
    # One budget for the whole verdict: no request of any probe outlives it.
    deadline = time.perf_counter() + config.verdict_budget_s
    handles = _open_handles(sandbox, source, filename, 2 + config.random_workers, deadline)
    main, twin = handles[:2]
    try:
        evidence.load = main.loaded
        if not main.loaded.ok:
            return evidence
        evidence.methods = list(main.info.get("methods", []))
        evidence.action_format = main.info.get("action_format", PLAIN)
        evidence.declared_max_turns = main.info.get("max_turns")
        evidence.turn_budget = evidence.declared_max_turns or config.max_turns
        if not evidence.has_solution and len(handles) == 2:  # random episode 0 needs a fresh worker
            handles += _open_handles(sandbox, source, filename, 1, deadline)
        players = [*handles[2:], twin, main]
        deals = [range(k, config.random_episodes, len(players)) for k in range(len(players))]
        randoms = {id(h): _random_probe(evidence, h, config, deal) for h, deal in zip(players, deals)}
        probes: list[Probe] = [_then(_main_probe(evidence, main, config), randoms.pop(id(main))),
                               _then(_twin_probe(evidence, twin, config), randoms.pop(id(twin))),
                               *randoms.values()]
        # A timeout already decides the verdict; waiting out more of them would only cost time.
        run_lockstep(probes, stop_on={"timeout"})
        evidence.random.sort(key=lambda t: t.seed)
        return evidence
    finally:
        for h in handles:
            h.close()
