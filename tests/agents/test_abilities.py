"""What agents and designers can do is declared by protocols, and each built-in part declares it truly."""

from __future__ import annotations

from spadegym.agents import make_agent
from spadegym.agents.base import Agent, LearningAgent
from spadegym.designers import make_designer
from spadegym.designers.base import Designer, LearningDesigner, ModelDesigner


def test_only_the_learner_declares_that_it_learns() -> None:
    learner, player = make_agent("learner", seed=1), make_agent("random", seed=1)
    assert isinstance(learner, LearningAgent) and learner.trains_on_hint
    assert isinstance(player, Agent) and not isinstance(player, LearningAgent)
    assert player.lockstep and learner.lockstep
    llm = make_agent("openai:some/model@http://127.0.0.1:9/v1")
    assert not isinstance(llm, LearningAgent) and llm.lockstep is False


def test_a_restored_learner_acts_as_the_saved_one(tmp_path) -> None:
    import numpy as np

    saved = make_agent("learner", seed=5)
    saved.rng.random(3)  # move its random stream off the seed
    saved.save(tmp_path / "ckpt")
    fresh = make_agent("learner", seed=0)
    fresh.restore(tmp_path / "ckpt")
    assert fresh.config.seed == 5 and fresh.rng.random() == saved.rng.random()
    assert all(np.array_equal(a, b) for a, b in zip(fresh.scorer.state().values(), saved.scorer.state().values()))


def test_adaptive_designers_learn_and_baselines_do_not() -> None:
    assert isinstance(make_designer("mutation"), LearningDesigner)
    assert isinstance(make_designer("openai:m@http://127.0.0.1:9/v1"), LearningDesigner)
    baseline = make_designer("fixed:easy")
    assert isinstance(baseline, Designer) and not isinstance(baseline, LearningDesigner)


def test_only_model_backed_designers_declare_a_model_to_lend() -> None:
    llm = make_designer("openai:m@http://127.0.0.1:9/v1")
    assert isinstance(llm, ModelDesigner) and llm.report()["proposals"] == 0
    assert not isinstance(make_designer("mutation"), ModelDesigner)
    assert not isinstance(make_designer("uniform"), ModelDesigner)
    llm.close()


OWN_PARTS = '''
from spadegym.rollout.agent import Reply


class EchoAgent:
    name, keeps_history, needs_valid_actions, lockstep = "echo", False, False, True

    def __init__(self, seed=0, word="go"):
        self.seed, self.word = seed, word

    async def act(self, views):
        return [Reply(self.word, self.word) for _ in views]

    def end_episodes(self, keys):
        pass

    async def aclose(self):
        pass


class NoDesigner:
    def __init__(self, seed=0):
        self.seed = seed
'''


def test_your_own_parts_are_named_module_colon_class(tmp_path, monkeypatch) -> None:
    import pytest

    from spadegym.agents.registry import AgentSpecError
    from spadegym.designers.registry import UnknownDesigner

    (tmp_path / "ownpkg").mkdir()
    (tmp_path / "ownpkg" / "__init__.py").write_text("")
    (tmp_path / "ownpkg" / "parts.py").write_text(OWN_PARTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = make_agent("ownpkg.parts:EchoAgent", seed=4, word="left")
    assert (agent.name, agent.seed, agent.word) == ("echo", 4, "left") and not isinstance(agent, LearningAgent)
    with pytest.raises(AgentSpecError, match="cannot be imported"):
        make_agent("ownpkg.parts:Missing")
    with pytest.raises(UnknownDesigner, match="does not implement the Designer protocol"):
        make_designer("ownpkg.parts:NoDesigner")


class WeightedDesigner:
    """A designer with weights of its own: it learns and saves them (as an hf: designer does)."""

    name = "weighted"

    def __init__(self) -> None:
        self.updates: list[int] = []

    async def propose(self, context):
        return []

    def state_dict(self):
        return {}

    def load_state_dict(self, state) -> None:
        pass

    def update(self, feedback) -> None:
        self.updates.append(len(feedback))

    def save(self, directory):
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "weights").write_text("w")

    def restore(self, directory) -> None:
        assert (directory / "weights").read_text() == "w"


def test_a_composite_declares_what_its_parts_can_do(tmp_path) -> None:
    from spadegym.designers.base import Abilities, Feedback, abilities
    from spadegym.designers.mixed import MixedDesigner, SourcePart
    from spadegym.designers.pool import PoolDesigner

    files = [tmp_path / "level.py"]
    sampler, mutation, weighted = make_designer("uniform"), make_designer("mutation", seed=1), WeightedDesigner()
    # A mixed curriculum around a sampler learns only when a source does; its weights are its designer's.
    assert abilities(MixedDesigner(sampler, [SourcePart("pool:x", PoolDesigner(files), 0.5)], 0.5)) == Abilities()
    assert abilities(MixedDesigner(sampler, [SourcePart("m", mutation, 0.5)], 0.5)) == Abilities(learns=True)
    mixed = MixedDesigner(weighted, [], 1.0)
    assert abilities(mixed) == Abilities(learns=True, checkpointed=True)
    pool = PoolDesigner(files, then=weighted)
    assert abilities(pool) == Abilities(learns=True, checkpointed=True)
    pool.save(tmp_path / "ckpt")
    pool.restore(tmp_path / "ckpt")
    pool.update([Feedback("pool-00000", 1.0, True, pooled=True), Feedback("w-1", 0.5, True)])  # the pool's own do not count
    assert weighted.updates == [1]
    assert abilities(PoolDesigner(files)) == Abilities() and PoolDesigner(files).save(tmp_path / "none") is None
    assert not (tmp_path / "none").exists()
