"""The episode runner end to end in the real sandbox, with small environments written here."""

from __future__ import annotations

import asyncio

import pytest
from rollout_envs import COUNTER, DECLARED, ENDLESS, HANGS, RAISES, VAULT

from spadegym.agents import RandomAgent, ScriptedAgent, make_agent
from spadegym.envfile import HINT_PREFIX
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, RolloutError, derive_seed, run_episodes
from spadegym.rollout.runner import FORMAT_REMINDER
from spadegym.sandbox import Sandbox, SandboxConfig


def play(sandbox: Sandbox, sources: dict[str, str], plays: list[Play], agent, **config) -> list:
    envs = {env_id: Level(source) for env_id, source in sources.items()}
    return asyncio.run(run_episodes(sandbox, envs, plays, agent, RolloutConfig(**config)))


def test_both_arms_see_the_same_instance_for_the_same_seed(sandbox: Sandbox) -> None:
    seeds = [derive_seed("run", 0, "vault", g) for g in range(4)]
    plays = [Play("vault", s, hinted=h, group=g) for g, s in enumerate(seeds) for h in (False, True)]
    episodes = play(sandbox, {"vault": VAULT}, plays, ScriptedAgent(["000"]), max_turns=1)
    firsts = [ep.turns[0].observation for ep in episodes]
    for plain, hinted in zip(firsts[::2], firsts[1::2]):
        assert hinted == f"{plain}\n{HINT_PREFIX}the code is printed on the door"
    assert len(set(firsts[::2])) > 1  # different seeds, different instances
    assert [ep.hinted for ep in episodes] == [False, True] * 4
    assert [ep.group for ep in episodes] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_max_turns_declared_and_default(sandbox: Sandbox) -> None:
    plays = [Play("endless", 1), Play("short", 1)]
    endless, short = play(sandbox, {"endless": ENDLESS, "short": DECLARED}, plays, RandomAgent(), max_turns=5)
    assert len(endless.turns) == 5 and endless.truncated and not endless.terminated
    assert len(short.turns) == 3 and short.truncated
    assert endless.ret == short.ret == 0.0 and endless.scored and not endless.success


def test_env_failures_are_recorded_and_never_scored(sandbox: Sandbox) -> None:
    [broken] = play(sandbox, {"broken": RAISES}, [Play("broken", 0)], RandomAgent())
    assert broken.failure == "exception" and "the environment has a bug" in broken.failure_message
    assert not broken.scored and not broken.success
    with Sandbox(SandboxConfig(step_timeout_s=0.5)) as quick:
        hang, fine = play(quick, {"hang": HANGS, "vault": VAULT}, [Play("hang", 0), Play("vault", 0)],
                          ScriptedAgent(["000"]), max_turns=1)
    assert hang.failure == "timeout" and not hang.scored
    assert fine.failure is None and fine.scored  # one hung worker does not stop the others


def test_format_failures_are_counted_and_the_agent_reminded(sandbox: Sandbox) -> None:
    agent = ScriptedAgent(["I am not sure \\boxed{", "still thinking", "000"])
    [ep] = play(sandbox, {"endless": ENDLESS}, [Play("endless", 0)], agent, max_turns=3)
    assert ep.format_failures == 1 and ep.failure is None and ep.scored
    assert [t.action for t in ep.turns] == [None, "still thinking", "000"]
    assert ep.turns[1].observation.endswith(FORMAT_REMINDER)


def _hint_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(HINT_PREFIX)]


@pytest.mark.parametrize("keeps_history", [True, False])
def test_the_hint_reaches_the_agent_as_one_line(sandbox: Sandbox, keeps_history: bool) -> None:
    agent = ScriptedAgent(["a", "b", "c"])
    agent.keeps_history = keeps_history
    plays = [Play("counter", 0, hinted=True), Play("counter", 0, hinted=False)]
    hinted, plain = play(sandbox, {"counter": COUNTER}, plays, agent)
    seen = [t.observation for t in hinted.turns]
    assert len(seen) == 3
    if keeps_history:  # once, at the end of the first observation
        assert seen[0] == "Count with me.\nhint: say 1"
        assert [_hint_lines(s) for s in seen[1:]] == [[], []]
    else:  # at the end of every observation, re-evaluated
        assert seen == ["Count with me.\nhint: say 1", "Count is 1.\nhint: say 2", "Count is 2.\nhint: say 3"]
    assert all(not _hint_lines(t.observation) for t in plain.turns)


def test_a_designer_hint_replaces_the_files_own(sandbox: Sandbox) -> None:
    envs = {"vault": Level(VAULT, hint="look   at\nthe door")}
    [ep] = asyncio.run(run_episodes(sandbox, envs, [Play("vault", 5, hinted=True)], ScriptedAgent(["000"]),
                                    RolloutConfig(max_turns=1)))
    assert _hint_lines(ep.turns[0].observation) == ["hint: look at the door"]


def test_deterministic_for_fixed_seeds(sandbox: Sandbox) -> None:
    plays = [Play("vault", derive_seed(7, g), hinted=bool(g % 2)) for g in range(6)]

    def summary():
        episodes = play(sandbox, {"vault": VAULT}, plays, RandomAgent(seed=11), max_turns=2, concurrency=4)
        return [([t.observation for t in ep.turns], [t.action for t in ep.turns], ep.ret) for ep in episodes]

    first = summary()
    assert first == summary()
    assert any(ret == 1.0 for _, _, ret in first) and any(ret == 0.0 for _, _, ret in first)


def test_a_choice_agent_refuses_an_environment_without_valid_actions(sandbox: Sandbox) -> None:
    with pytest.raises(RolloutError, match="no valid_actions"):
        play(sandbox, {"endless": ENDLESS}, [Play("endless", 0)], make_agent("learner"))


@pytest.mark.parametrize("keeps_history", [True, False])
def test_the_view_step_alone_puts_the_hint_line_where_the_agent_reads_it(keeps_history: bool) -> None:
    from spadegym.rollout import Episode
    from spadegym.rollout.runner import EpisodeRun, _LiveEpisode

    agent = make_agent("random")
    agent.keeps_history = keeps_history
    run = EpisodeRun(None, {}, [], agent)  # no sandbox: the view step needs none
    item = _LiveEpisode("k", None, Episode("e", 1, True), hinted=True, observation="obs", hint="go left",
                        play=Play("e", 1, hinted=True))
    first = run.view(item)
    item.history.append(("obs", "x"))
    later = run.view(item)
    assert first.observation == "obs\nhint: go left"
    assert later.observation == ("obs" if keeps_history else "obs\nhint: go left")
    assert later.history == ([("obs", "x")] if keeps_history else []) and later.turn == 1


def test_handles_opened_together_load_at_once_and_read_as_if_waited_for(sandbox: Sandbox) -> None:
    handles = [sandbox.open(source, f"{name}.py") for name, source in (("vault", VAULT), ("a", COUNTER),
                                                                        ("b", COUNTER), ("broken", "x = ("))]
    # Opening sent each load and waited for none: all are in flight in their workers at once.
    assert all(h.pending_load is not None and h.worker.inflight for h in handles)
    sandbox.gather([h.pending_load for h in handles[:3]])  # one wait for three loads
    assert all(h.pending_load.outcome is not None for h in handles[:3])
    assert [h.loaded.ok for h in handles[:3]] == [True, True, True]
    assert handles[3].pending_load is not None and handles[3].pending_load.outcome is None
    assert not handles[3].loaded.ok and "Syntax error" in handles[3].loaded.message  # reading it waited for it
    assert all(h.pending_load is None for h in handles)
    assert handles[0].reset(seed=1).ok and handles[1].info["max_turns"] == 3
    for h in handles:
        h.close()
