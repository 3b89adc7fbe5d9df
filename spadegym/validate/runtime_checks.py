"""Runtime section: the contract as the sandbox saw it (loading, types, determinism, robustness)."""

from __future__ import annotations

from ..envfile import clip_reward, parse_tool_call, tool_name
from ..sandbox import Outcome
from .config import ValidationConfig
from .evidence import Evidence
from .probes import Trace
from .verdict import CONTRACT, DEGENERATE, ERROR, INFEASIBLE, NONDETERMINISTIC, WARNING, Check, failed, passed

# What to change, per sandbox failure category (the sandbox's message says what happened).
ADVICE = {
    "timeout": "make it return quickly (no endless loops, sleeps or huge searches)",
    "memory": "store less (no huge lists, strings or tables)",
    "crash": "return values instead of exiting the process",
    "forbidden": "use no files, processes, network or signals",
    "protocol": "leave the process's file descriptors alone",
    "exception": "fix the code so that it cannot raise there",
    "invalid_return": "return exactly the documented types",
    "too_large": "keep observations, menus, hints and info small and flat",
}


def short(text: object, limit: int = 40) -> str:
    """A quoted, shortened value for a message."""
    s = repr(str(text))
    return s if len(s) <= limit else s[: limit - 4] + "...'"


def explain(call: str, out: Outcome, advice: str | None = None) -> str:
    """One sentence: which call failed, how (the sandbox's message), and what to change."""
    what = out.message.rstrip(".") or out.status
    return f"{call} failed ({out.status}): {what}; {advice or ADVICE.get(out.status, 'fix the code there')}."


def runtime_checks(evidence: Evidence, config: ValidationConfig) -> list[Check]:
    """Loading and reset gate the rest: without them nothing else can be observed."""
    if not evidence.load.ok:
        return [failed("loads", explain("Loading the file and calling the class with no arguments", evidence.load),
                       evidence.load.status)]
    checks = [passed("loads")]
    if evidence.first is None:  # the probes stopped before the first reset answered
        return [*checks, failed("reset_runs", "The probes stopped before reset() answered; make loading and "
                                "reset() return quickly.", "timeout")]
    if not evidence.first.reset.ok:
        return [*checks, failed("reset_runs", explain(f"reset(seed={evidence.first.seed})", evidence.first.reset),
                                evidence.first.reset.status)]
    checks.append(_resets_run(evidence))
    checks.append(_observation_not_empty(evidence.first))
    if evidence.has_valid_actions:
        checks.append(_valid_actions(evidence.first))
    if evidence.has_tools or "execute_tool" in evidence.methods:
        checks.append(_tools(evidence))
        if checks[-1].passed:
            checks.append(_tools_callable(evidence))
    checks += _criteria_evaluable(evidence)
    checks.append(_steps_run(evidence))
    checks.append(_reward_range(evidence, config))
    checks += [c for c in (_deterministic(evidence), _replay(evidence)) if c is not None]
    checks.append(_robust(evidence))
    return checks


def _resets_run(evidence: Evidence) -> Check:
    extra = [(t.seed, t.reset) for t in evidence.all_traces()]
    if evidence.other_reset is not None:
        extra.append((evidence.seeds.second, evidence.other_reset))
    for seed, out in extra:
        if not out.ok:
            advice = "make reset() work for every integer seed" if out.status == "exception" else None
            return failed("reset_runs", explain(f"reset(seed={seed})", out, advice), out.status)
    return passed("reset_runs")


def _observation_not_empty(first: Trace) -> Check:
    if first.first_observation.strip():
        return passed("reset_observation")
    return failed("reset_observation", f"reset(seed={first.seed}) returned an empty observation: describe the "
                  "task, the rules and the answer format in the first observation.", CONTRACT)


def _valid_actions(first: Trace) -> Check:
    menu = first.reset.value.get("valid_actions")
    if not menu:
        return failed("valid_actions_nonempty", f"valid_actions() returned an empty list right after "
                      f"reset(seed={first.seed}): return the actions that are legal now as a non-empty "
                      "list of strings.", CONTRACT)
    if any(not a.strip() for a in menu):
        return failed("valid_actions_nonempty", "valid_actions() contains an empty string: list only "
                      "actions an agent can send, each a non-empty string.", CONTRACT)
    return passed("valid_actions_nonempty")


def _tools(evidence: Evidence) -> Check:
    """A tool-use environment lists its tools and can run them."""
    if not evidence.has_tools:
        return failed("tools_listed", "The class defines execute_tool() but no get_tools(), so agents are "
                      "never shown tools and never call them: add get_tools(self) returning the tool "
                      "schemas, or remove execute_tool().", CONTRACT, WARNING)
    if "execute_tool" not in evidence.methods:
        return failed("tools_listed", "The class defines get_tools() but no execute_tool(self, name, "
                      "arguments), so every tool call would fail: add it.", CONTRACT)
    out = evidence.tools
    if out is None:
        return passed("tools_listed")  # a stopped probe never asked
    if not out.ok:
        return failed("tools_listed", explain(f"get_tools() after reset(seed={evidence.seeds.second})", out,
                                              "return a list of dicts, each with the tool's 'name'"
                                              if out.status == "invalid_return" else None), out.status)
    if not out.value:
        return failed("tools_listed", f"get_tools() returned an empty list after reset(seed={evidence.seeds.second}): "
                      "return the schema of every tool the agent can call.", CONTRACT)
    return passed("tools_listed")


def _schema_parameters(schema: dict) -> list[str]:
    """The parameter names a tool schema declares (its ``properties``)."""
    spec = schema.get("parameters") or (schema.get("function") or {}).get("parameters") or {}
    properties = spec.get("properties") if isinstance(spec, dict) else None
    return list(properties) if isinstance(properties, dict) else []


def _tools_callable(evidence: Evidence) -> Check:
    """Every tool get_tools() lists can be called with its declared parameters (read from the
    ``tool_<name>`` methods the reference's base dispatches to; other dispatch is not readable)."""
    methods, out = evidence.tool_methods, evidence.tools
    if methods is None or out is None or not out.ok:
        return passed("tools_callable")
    for schema in out.value:
        name = tool_name(schema) or "?"
        method = methods.get(name)
        if method is None:
            return failed("tools_callable", f"get_tools() lists the tool '{name}', but the class has no tool_{name}() "
                          "method, so every call of it fails: add the method, or remove the tool from self._tools.",
                          CONTRACT)
        declared = _schema_parameters(schema)
        unknown = [p for p in declared if p not in method.parameters] if not method.any_keyword else []
        if unknown:
            return failed("tools_callable", f"get_tools() declares the parameter '{unknown[0]}' of the tool '{name}', "
                          f"but tool_{name}() takes {', '.join(method.parameters) or 'no parameters'}, so a call "
                          "as declared fails: name the method's parameters exactly as the schema's properties.",
                          CONTRACT)
        missing = [p for p in method.required if p not in declared]
        if missing:
            return failed("tools_callable", f"tool_{name}() requires '{missing[0]}', which get_tools() does not "
                          f"declare for the tool '{name}', so a call as declared fails: declare it in the schema's "
                          "properties, or give the parameter a default.", CONTRACT)
    return passed("tools_callable")


def _criteria_evaluable(evidence: Evidence) -> list[Check]:
    """A multi-step tool game's success criteria (``_message_criteria`` over ``_state``) can be evaluated
    at reset: one that raises at every probed seed can never let its step complete (the reference's
    reset gate refuses it); one already true at every seed lets the agent skip its step (a warning)."""
    resets = [(t.seed, t.reset) for t in (evidence.first,) if t is not None]
    if evidence.other_reset is not None:
        resets.append((evidence.seeds.second, evidence.other_reset))
    seen = [(seed, out.value["criteria"]) for seed, out in resets if out.ok and "criteria" in out.value]
    if not seen:
        return []
    seeds = " and ".join(f"reset(seed={seed})" for seed, _ in seen)
    count = min(len(values) for _, values in seen)
    for i in range(count):
        results = [values[i] for _, values in seen]
        if all(isinstance(r, str) for r in results):
            return [failed("criteria_evaluable", f"Success criterion {i + 1} (self._message_criteria[{i}]) raises "
                           f"{short(results[0], 80)} on the state after {seeds}, so its step can never complete: "
                           "read self._state with the keys and shapes reset() and the tools write.", INFEASIBLE)]
    checks = [passed("criteria_evaluable")]
    done = [i for i in range(count) if all(values[i] is True for _, values in seen)]
    if done:
        checks.append(failed("criteria_false_at_reset", f"Success criterion {done[0] + 1} is already true after "
                             f"{seeds}, so the agent completes its step without acting: make it check the change "
                             "its instruction asks for.", DEGENERATE, WARNING))
    return checks


def _steps_run(evidence: Evidence) -> Check:
    """Steps with ordinary actions (the solution's and the random policy's)."""
    twin = "replaying solution() in a second worker" if evidence.has_solution else "random play"
    for trace, where in [(evidence.first, "playing solution()"), (evidence.twin, twin),
                         *((t, "random play") for t in evidence.random),
                         *((t, "calling each listed tool" if evidence.has_tools else "trying each of valid_actions()")
                           for t in evidence.sweep)]:
        if trace is None or trace.failure is None or trace.failure is trace.reset:
            continue
        out = trace.failure
        return failed("step_runs", explain(f"step({short(trace.failed_action)}) during {where} after "
                                           f"reset(seed={trace.seed})", out), out.status)
    return passed("step_runs")


def _reward_range(evidence: Evidence, config: ValidationConfig) -> Check:
    for trace in evidence.all_traces():
        for action, out in zip(trace.actions, trace.steps):
            r = out.value["reward"] if out.ok else 0.0
            if not -1.0 <= r <= 1.0:
                severity = ERROR if config.reward_range_is_error else WARNING
                return failed("reward_in_range", f"step({short(action)}) returned reward {r:g}, outside "
                              f"[-1, 1], which the host clamps to {clip_reward(r):g}: scale rewards into "
                              "[-1, 1] with 1.0 for success.", CONTRACT, severity)
    return passed("reward_in_range")


def _first_difference(a: list, b: list) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _values(out: Outcome | None) -> object:
    return out.value if out is not None and out.ok else None


def _deterministic(evidence: Evidence) -> Check | None:
    """None when a stopped probe left nothing to compare."""
    reference = evidence.first if evidence.has_solution else (evidence.random[0] if evidence.random else None)
    if reference is None or evidence.twin is None or reference.seed != evidence.twin.seed:
        return None
    advice = ("derive all randomness from the seed (random.Random(seed), or the module random that the "
              "runtime seeds), never from time, id(), hash() of objects or unseeded generators")
    same = f"Two fresh workers given reset(seed={reference.seed})"
    if _values(evidence.solution) != _values(evidence.twin_solution):
        return failed("deterministic", f"{same} returned different solution() lists "
                      f"({short(_values(evidence.solution))} vs {short(_values(evidence.twin_solution))}), so the instance "
                      f"depends on more than the seed: {advice}.", NONDETERMINISTIC)
    a, b = reference.signature(), evidence.twin.signature()
    if a != b:
        i = _first_difference(a, b)
        if i == 0:
            where = f"returned different first observations ({short(a[0], 60)} vs {short(b[0], 60)})"
        elif i < min(len(a), len(b)):
            where = (f"diverged at step {i} (action {short(a[i][0])}: {short(a[i][1:], 60)} vs "
                     f"{short(b[i][1:], 60)})")
        else:
            where = f"ended after different numbers of steps ({len(a) - 1} vs {len(b) - 1})"
        return failed("deterministic", f"{same} and the same actions {where}: {advice}.", NONDETERMINISTIC)
    if evidence.twin_other_reset is not None and evidence.other_reset is not None:
        first, second = _values(evidence.other_reset), _values(evidence.twin_other_reset)
        if first != second or _values(evidence.other_solution) != _values(evidence.twin_other_solution):
            return failed("deterministic", f"Two fresh workers given reset(seed={evidence.seeds.second}) built "
                          f"different instances (first observation, valid_actions() or solution() differ): "
                          f"{advice}.", NONDETERMINISTIC)
    return passed("deterministic")


def _replay(evidence: Evidence) -> Check | None:
    if evidence.replay is None or evidence.first is None:
        return None
    if not evidence.replay.ok:
        return failed("replay_after_reset", explain(f"reset(seed={evidence.first.seed}) after a played episode",
                                                    evidence.replay, "reset() must rebuild all state"), evidence.replay.status)
    before, after = evidence.first.first_observation, evidence.replay.value["observation"]
    if before == after:
        return passed("replay_after_reset")
    return failed("replay_after_reset", f"reset(seed={evidence.first.seed}) after playing an episode returned "
                  f"{short(after, 60)} instead of the first {short(before, 60)}: rebuild every piece of state "
                  "in reset() (counters, boards, generators) instead of carrying it over from the last "
                  "episode.", NONDETERMINISTIC)


def _robust(evidence: Evidence) -> Check:
    for trace in [*evidence.garbage, evidence.repeated]:
        if trace is None or trace.failure is None or trace.failure is trace.reset:
            continue
        out = trace.failure
        advice = ("treat any unexpected text as an invalid move and answer it with an observation "
                  "(reward 0) instead of raising") if out.status == "exception" else None
        call = parse_tool_call(trace.failed_action) if evidence.has_tools else None
        what = (f"execute_tool({short(call.name)}, {short(call.arguments, 60)}) with a malformed call"
                if call is not None else f"step({short(trace.failed_action)}) with a malformed action")
        if call is not None and out.status == "exception":
            advice = ("answer a call with unknown, missing or mistyped arguments with an error message "
                      "(reward 0) instead of raising")
        return failed("robust_to_bad_actions", explain(what, out, advice), out.status)
    return passed("robust_to_bad_actions")
