"""Agent specs -> agents, and one-sentence errors for bad specs and options."""

from __future__ import annotations

from pathlib import Path

import pytest

from spadegym.agents import (
    AgentSpecError,
    OpenAIAgent,
    RandomAgent,
    ScriptedAgent,
    agent_kinds,
    make_agent,
)
from spadegym.agents.base import Agent


def test_each_kind_builds_an_agent(tmp_path: Path) -> None:
    script = tmp_path / "moves.txt"
    script.write_text("north\n")
    built = {
        "random": make_agent("random", seed=3),
        "human": make_agent("human"),
        f"scripted:{script}": make_agent(f"scripted:{script}"),
        "openai:qwen@http://127.0.0.1:9/v1": make_agent("openai:qwen@http://127.0.0.1:9/v1", temperature=0.1,
                                                        concurrency=8, episode_timeout_s=30),
    }
    for agent in built.values():
        assert isinstance(agent, Agent)
    assert isinstance(built["random"], RandomAgent) and built["random"].seed == 3
    assert isinstance(built[f"scripted:{script}"], ScriptedAgent)
    llm = built["openai:qwen@http://127.0.0.1:9/v1"]
    assert isinstance(llm, OpenAIAgent)
    assert llm.endpoint.model == "qwen" and llm.endpoint.base_url == "http://127.0.0.1:9/v1"
    assert llm.endpoint.temperature == 0.1 and llm.endpoint.concurrency == 8
    assert llm.config.episode_timeout_s == 30 and llm.keeps_history


def test_learner_specs_build_fresh_or_load_a_checkpoint(tmp_path: Path) -> None:
    learner = make_agent("learner", seed=1)
    assert learner.needs_valid_actions
    learner.save(tmp_path / "ckpt")
    loaded = make_agent(f"learner:{tmp_path / 'ckpt'}")
    assert type(loaded) is type(learner)
    with pytest.raises(AgentSpecError, match="cannot load the learner from"):
        make_agent(f"learner:{tmp_path / 'missing'}")


@pytest.mark.parametrize("spec, message", [
    ("randm", "did you mean 'random'"),
    ("opnai:gpt", "did you mean 'openai:MODEL[@BASE_URL]'"),
    ("zzz", "known agents: random, human"),
    ("openai:", "needs a model"),
    ("scripted", "needs a file"),
    ("random:3", "takes no argument"),
])
def test_bad_specs_are_one_sentence(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError) as raised:
        make_agent(spec)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_options_are_checked() -> None:
    with pytest.raises(AgentSpecError, match="did you mean 'temperature'"):
        make_agent("openai:m", temprature=0.5)
    with pytest.raises(AgentSpecError, match="'temperature' is invalid"):
        make_agent("openai:m", temperature=9)
    with pytest.raises(AgentSpecError, match="takes no options"):
        make_agent("random", temperature=0.5)


def test_learner_run_takes_the_runs_last_checkpoint(tmp_path: Path) -> None:
    from spadegym.agents.registry import AGENTS
    from spadegym.store import RunStore
    from spadegym.store.learner_run import run_learner as resolve

    def run_learner(text: str) -> str:
        return resolve(AGENTS.parse(text)).text

    run = tmp_path / "run"
    with RunStore.create(run, {}, {}) as store:
        with pytest.raises(AgentSpecError, match="has no learner checkpoint"):
            run_learner(f"learner:{run}")
        for n, updates in ((0, 3), (1, 7)):  # as the loop writes them: a checkpoint per round, named in its state
            learner = make_agent("learner", seed=n)
            learner.updates = updates
            learner.save(store.checkpoint_dir / f"round-{n:04d}")
            with store.round(n) as tx:
                tx.save_state("learner", {"checkpoint": f"round-{n:04d}", "round": n})
                tx.finish({})
    assert make_agent(run_learner(f"learner:{run}")).updates == 7
    assert run_learner(f"learner:{run / 'checkpoints' / 'round-0000'}") == f"learner:{run / 'checkpoints' / 'round-0000'}"
    assert make_agent(run_learner(f"learner:{run / 'checkpoints' / 'round-0000'}")).updates == 3
    assert run_learner("random") == "random"


def test_kinds_are_listed() -> None:
    assert agent_kinds() == ["random", "human", "scripted:FILE", "learner[:DIR]", "openai:MODEL[@BASE_URL]",
                             "hf:PATH", "package.module:Class"]


def test_the_spec_url_wins_over_a_configured_one() -> None:
    configured = make_agent("openai:m", base_url="http://127.0.0.1:1/v1")
    assert configured.endpoint.base_url == "http://127.0.0.1:1/v1" and configured.endpoint.model == "m"
    with pytest.raises(AgentSpecError, match="has no option 'model'"):  # the spec names the model
        make_agent("openai:m", model="another")
    spec = make_agent("openai:m@http://127.0.0.1:2/v1", base_url="http://127.0.0.1:1/v1")
    assert spec.endpoint.base_url == "http://127.0.0.1:2/v1"
