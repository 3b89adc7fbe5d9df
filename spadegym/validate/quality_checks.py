"""Feasibility and degeneracy sections: can it be won, and only with skill?"""

from __future__ import annotations

import functools
import re

from ..envfile import is_success, parse_tool_call, tool_name
from ..envfile.contract import PLAIN
from .config import ValidationConfig
from .evidence import Evidence
from .leak import Answer, leaks_in_hint, leaks_in_observation
from .runtime_checks import explain, short
from .verdict import CONTRACT, DEGENERATE, INFEASIBLE, LEAK, WARNING, Check, failed, passed

_DIGIT = re.compile(r"\d")


@functools.lru_cache(maxsize=256)  # the same malformed actions for every file, one of them 100,000 characters
def _has_digit(action: str) -> bool:
    return _DIGIT.search(action) is not None


def feasibility_checks(evidence: Evidence) -> list[Check]:
    """Only for files with solution(): playing it from reset must win within the turn budget."""
    if not evidence.has_solution or evidence.first is None or evidence.solution is None:
        return []
    seed = evidence.first.seed
    if not evidence.solution.ok:
        return [failed("solution_returns_actions", explain(f"solution() after reset(seed={seed})", evidence.solution,
                       "return the list of action strings that wins the current instance"), evidence.solution.status)]
    actions = evidence.solution_actions or []
    if not actions:
        return [failed("solution_returns_actions", f"solution() returned an empty list after reset(seed={seed}): "
                       "return the actions that win the current instance, in order.", CONTRACT)]
    checks = [passed("solution_returns_actions"), _solution_wins(evidence, actions)]
    checks.append(_solution_fits(evidence, actions))
    return checks


def _solution_wins(evidence: Evidence, actions: list[str]) -> Check:
    trace = evidence.first
    assert trace is not None
    played = f"Playing solution() {short(actions, 60)} from reset(seed={trace.seed})"
    if trace.failure is not None:
        return failed("solution_wins", explain(f"{played}: step({short(trace.failed_action)})", trace.failure),
                      trace.failure.status)
    if trace.ended and is_success(trace.ret):
        return passed("solution_wins", "feasible: solution() wins when played")
    if evidence.solution_is_text:
        return _text_solution(evidence)
    boxed = (" Its actions hold \\boxed{}, which an agent's action never does (the box is stripped from "
             "the reply before step()): return bare actions, or parse the box in step()"
             if evidence.solution_boxed and evidence.action_format == PLAIN else "")
    if boxed:
        return failed("solution_wins", f"{played} did not win.{boxed}.", INFEASIBLE)
    last = trace.steps[-1].value if trace.steps else {"reward": 0.0, "terminated": False, "truncated": False}
    if not trace.ended:
        why = ("left the episode running after its last action: return every action up to the winning one, "
               "and end the episode with terminated=True and reward 1.0 when the task is solved")
    elif last["truncated"] and not last["terminated"]:
        why = (f"was truncated after {len(trace.steps)} of {len(actions)} actions: make the turn budget "
               "large enough for the solution, or the solution shorter")
    else:
        why = (f"ended with return {trace.ret:g} (last reward {last['reward']:g}): make solution() match "
               "the win condition in step(), or fix the win condition")
    return failed("solution_wins", f"{played} {why}.", INFEASIBLE)


def _text_solution(evidence: Evidence) -> Check:
    """A text solution (the reference's prose): won as a sequence; else, in a SPADE-style file (boxed or
    tool_call format), feasibility unverified (a warning), and in a plain one infeasible as before."""
    won = evidence.winning_sequence
    if won is not None:
        return passed("solution_wins", f"feasible: solution() text wins played as {len(won.actions)} actions "
                      f"{short(won.actions, 60)}")
    text, tried = short((evidence.raw_solution or [""])[0], 60), len(evidence.sequences)
    if evidence.action_format == PLAIN:  # spadegym's own contract: a text solution is the answer, and must win
        return failed("solution_wins", f"solution() returned text {text} that did not win played as one action "
                      f"or as any of {tried} sequences read from it: return the list of actions that wins.",
                      INFEASIBLE)
    return failed("solution_wins", f"Feasibility unverified: solution() returned text {text} that did not win "
                  f"played as one action or as any of {tried} sequences read from it; in a run the hint arm "
                  "judges it, and a list of the winning actions would let the gate prove it.", INFEASIBLE, WARNING)


def _solution_fits(evidence: Evidence, actions: list[str]) -> Check:
    trace = evidence.first
    assert trace is not None
    won = evidence.winning_sequence
    if evidence.solution_is_text and not (trace.ended and is_success(trace.ret)):
        if won is None:
            return passed("solution_fits_max_turns")  # unverified: nothing to measure
        trace, actions = won, won.actions
    needed = len(trace.steps) if trace.ended and is_success(trace.ret) else len(actions)
    if needed <= evidence.turn_budget:
        return passed("solution_fits_max_turns")
    source = f"max_turns={evidence.declared_max_turns}" if evidence.declared_max_turns else \
        f"the runner's default of {evidence.turn_budget} turns"
    return failed("solution_fits_max_turns", f"solution() needs {needed} actions but the episode is cut at "
                  f"{source}: raise max_turns or make the instance solvable in fewer moves.", INFEASIBLE)


def degeneracy_checks(evidence: Evidence, config: ValidationConfig, hint: str | None = None) -> list[Check]:
    checks: list[Check | None] = [_not_won_without_trying(evidence), _random_policy_loses(evidence, config),
                                  _reward_varies(evidence)]
    if config.check_leaks:
        checks += _leak_checks(evidence, config, hint)
    return [c for c in checks if c is not None]


def _not_won_without_trying(evidence: Evidence) -> Check:
    for trace in [*evidence.garbage, evidence.repeated]:
        if trace is None or not trace.actions or _has_digit(trace.actions[-1]):
            continue  # a malformed reply holding a number may be a leniently parsed right answer
        if trace.failure is None and trace.ended and is_success(trace.ret):
            return failed("not_won_without_trying", f"The meaningless action {short(trace.actions[-1])} won "
                          f"the episode after reset(seed={trace.seed}) (return {trace.ret:g}): end an episode "
                          "with a positive reward only when the task is really solved.", DEGENERATE)
    return passed("not_won_without_trying")


def _random_policy_loses(evidence: Evidence, config: ValidationConfig) -> Check | None:
    played = [t for t in evidence.random if t.failure is None]
    if not played:
        return None
    wins = sum(is_success(t.ret) for t in played)
    rate = wins / len(played)
    if rate <= config.random_win_threshold:
        return passed("random_policy_loses", f"random policy won {wins}/{len(played)}")
    policy = {"valid_actions": "uniform over valid_actions()",
              "observation": "uniform over the actions the observation lists",
              "tools": "calls of the listed tools with arguments from their schemas, and bare answers"}.get(evidence.menu_source or "",
                                                                                    "short generic answers")
    return failed("random_policy_loses", f"A random policy ({policy}) won {wins} of {len(played)} episodes "
                  f"({rate:.2f} > {config.random_win_threshold:g}): make winning depend on the hidden state, "
                  "e.g. more choices, fewer turns or a longer exact sequence.", DEGENERATE)


def _reward_varies(evidence: Evidence) -> Check | None:
    rewards = [r for t in evidence.all_traces() for r in t.rewards]
    if not rewards:
        return None
    if len(set(rewards)) > 1:
        return passed("reward_varies")
    # A file whose answer never depends on the action shows no sign of being playable: degenerate, whatever
    # the probes knew (a reward that never varies is then no hard game, but an ignored action).
    if not _reacts_to_actions(evidence) and evidence.has_tools:
        return failed("reward_varies", f"No tool call changes anything: from the same start every call of the "
                      f"listed tools got the same answer (with valid, mistyped and missing arguments), no call "
                      f"answered differently after others, and every reward was {rewards[0] + 0.0:g}: make the "
                      "tools read their arguments and the state, and give 1.0 when the task is done.", DEGENERATE)
    if not _reacts_to_actions(evidence):
        return failed("reward_varies", f"The environment ignores its action: every probe step from the same start "
                      f"got the same answer and the same reward {rewards[0] + 0.0:g}, whatever the action: read the "
                      "action in step(), answer it, and give 1.0 on success.", DEGENERATE)
    # In a reference-style file, random play that never earns a reward proves nothing when no probe knew a
    # winning play or every legal action (random play losing is the aim of its games): feasibility is
    # unverified (a warning), as for a prose solution, and a run's hint arm judges the file. spadegym's
    # own (plain) files keep the strict rule.
    authoritative = evidence.menu_source == "valid_actions" or evidence.played_solution
    if evidence.action_format != PLAIN and not authoritative:
        known = {"observation": "the actions its observation lists",
                 "tools": "its tools' schemas (argument values guessed from the text)"}.get(evidence.menu_source or "",
                                                                                           "no real action")
        return failed("reward_varies", f"Feasibility unverified: all {len(rewards)} probe steps returned the same "
                      f"reward {rewards[0] + 0.0:g}, but the probes knew {known} and no winning play (no "
                      "valid_actions(), no playable solution()): add solution() so the gate can tell.",
                      DEGENERATE, WARNING)
    return failed("reward_varies", f"All {len(rewards)} steps the probes played (random, malformed and "
                  f"solution actions) returned the same reward {rewards[0] + 0.0:g}: give 1.0 on success and 0 or small partial "
                  "credit otherwise, so the reward tells good play from bad.", DEGENERATE)


def _reacts_to_actions(evidence: Evidence) -> bool:
    """Some two probe steps taken from the same first observation got different answers (observation,
    reward or ending): the environment reads its action (or its hidden state shows). A tool game
    (``_tool_game_reacts``) is judged by its tools instead."""
    if evidence.has_tools:
        return _tool_game_reacts(evidence)
    answers: dict[str, set[tuple]] = {}
    for trace in evidence.all_traces():
        if trace.steps and trace.steps[0].ok:
            value = trace.steps[0].value
            answers.setdefault(trace.first_observation, set()).add(
                (value["observation"], value["reward"], value["terminated"], value["truncated"]))
    return any(len(seen) > 1 for seen in answers.values())


def _answer_of(out) -> tuple:
    value = out.value
    return value["observation"], value["reward"], value["terminated"], value["truncated"]


def _tool_game_reacts(evidence: Evidence) -> bool:
    """A tool game changes with what it is sent when, from the same start, two calls of its listed tools
    got different answers, or two bare answers did, or one call answered differently later in an
    episode than before (an earlier call changed the state). A listed tool answering differently from an
    unknown one, or from a bare answer, shows only the runtime's dispatch, not the game."""
    listed = {tool_name(s) for s in (evidence.tools.value if evidence.tools is not None and evidence.tools.ok
                                     else []) if isinstance(s, dict)}
    first: dict[tuple[str, str], set[tuple]] = {}
    later: dict[tuple[str, str], set[tuple]] = {}
    for trace in evidence.all_traces():
        for i, (action, out) in enumerate(zip(trace.actions, trace.steps)):
            if not out.ok:
                break
            call = parse_tool_call(action)
            kind = "answer" if call is None else ("tool" if call.name in listed else "")
            if not kind:
                continue
            if i == 0:
                first.setdefault((trace.first_observation, kind), set()).add(_answer_of(out))
            if not (out.value["terminated"] or out.value["truncated"]):  # an ending's text tells the turn count
                later.setdefault((trace.first_observation, action), set()).add(_answer_of(out))
    return any(len(seen) > 1 for seen in [*first.values(), *later.values()])


def _answer(evidence: Evidence) -> Answer | None:
    actions = evidence.solution_actions
    if evidence.solution_is_text:  # a plan in prose: its answer is what won, if anything did
        won = evidence.winning_sequence
        if won is None and not (evidence.first is not None and evidence.first.ended and is_success(evidence.first.ret)):
            return None
        actions = won.actions if won is not None else actions
    if not actions or evidence.first is None:
        return None
    other = evidence.other_solution.value if evidence.other_solution is not None and evidence.other_solution.ok else None
    return Answer(text=actions[-1].strip(), single_step=len(actions) == 1,
                  menu=evidence.first.reset.value.get("valid_actions"),
                  other_text=other[-1].strip() if isinstance(other, list) and other else None)


def _leak_checks(evidence: Evidence, config: ValidationConfig, hint: str | None) -> list[Check]:
    answer = _answer(evidence)
    if answer is None or evidence.first is None:
        return []
    limits = (config.min_answer_chars, config.min_answer_digits)
    seed = evidence.first.seed
    other_obs = evidence.other_reset.value["observation"] if evidence.other_reset is not None and evidence.other_reset.ok else None
    checks = []
    if leaks_in_observation(answer, evidence.first.first_observation, other_obs, *limits):
        checks.append(failed("answer_not_in_observation", f"The first observation after reset(seed={seed}) "
                             f"contains the answer {short(answer.text)} from solution(): keep it hidden and let "
                             "the agent infer it (if it is one of several listed options, return the options "
                             "from valid_actions() instead).", LEAK))
    else:
        checks.append(passed("answer_not_in_observation"))
    hint = hint if hint is not None else evidence.first.reset.value.get("hint")
    if hint:
        if leaks_in_hint(answer, hint, *limits):
            checks.append(failed("hint_does_not_reveal_answer", f"The hint {short(hint, 60)} states the answer "
                                 f"{short(answer.text)} of reset(seed={seed}): give a strategy or a partial fact "
                                 "that helps find it instead.", LEAK))
        else:
            checks.append(passed("hint_does_not_reveal_answer"))
    return checks
