"""An hf: designer in edit mode: a grammar holds its replies to the edit's form, only its choices train, and its
GRPO groups are the edits of one parent; in the loop it shares its weights with the hf: agent."""

from __future__ import annotations

import asyncio
import random

import pytest

torch = pytest.importorskip("torch")

from spadegym.designers.base import DesignContext, Feedback, LevelSummary  # noqa: E402
from spadegym.designers.edit_form import EditForm, LevelEdit  # noqa: E402
from spadegym.designers.edit_grammar import EditDecoder, Vocabulary  # noqa: E402
from spadegym.designers.hf import HFDesigner  # noqa: E402
from spadegym.designers.llm_config import LLMDesignerConfig  # noqa: E402
from spadegym.families import get_family, list_families  # noqa: E402
from spadegym.families.edits import edit_space  # noqa: E402
from spadegym.train import Policy, TrainConfig  # noqa: E402

CODES = get_family("code_breaker")


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return Policy.from_path(tiny_dir, TrainConfig(lr=1e-2, threads=1, gradient_checkpointing=False), seed=0)


def parents() -> list[LevelSummary]:
    return [LevelSummary("easy", CODES.skill, 0.9, 1.0, 0.1, 0.1, family=CODES.name, knobs=CODES.level_knobs(0)),
            LevelSummary("hard", CODES.skill, 0.0, 0.5, 0.5, 0.4, family=CODES.name, knobs=CODES.level_knobs(3))]


def test_every_row_of_the_grammar_is_an_edit_whatever_the_tokens(policy):
    space = edit_space("code_breaker")
    form = EditForm.of(space, space.level(2))
    decoder = EditDecoder(form, Vocabulary.of(policy.tokenizer))
    rng = random.Random(0)
    for _ in range(30):
        row, ids = decoder.row(), []
        while not row.finished:
            ids.append(rng.choice(row.allowed()))
            row.advance(ids[-1])
        assert ids[-1] == policy.tokenizer.eos_token_id and any(row.forced) and not all(row.forced)
        assert isinstance(form.parse(policy.tokenizer.decode(ids, skip_special_tokens=True)), LevelEdit)


def test_the_model_edits_every_parent_and_trains_only_on_its_choices_grouped_by_parent(policy):
    designer = HFDesigner(policy, config=LLMDesignerConfig(mode="edit", edits_per_parent=4), corpus=None)
    made = asyncio.run(designer.propose(DesignContext(skill=CODES.skill, count=8, parents=parents())))
    assert [c.refusal for c in made] == [None] * 8  # random weights, yet every reply is an edit
    assert sorted(c.notes.group for c in made) == ["easy"] * 4 + ["hard"] * 4
    traces = [designer._traces[c.candidate_id].trace for c in made]
    chosen = sum(t.sampled_tokens for t in traces)
    assert 0 < chosen < sum(len(t.completion) for t in traces)  # forced punctuation carries no loss
    # Rewards differ within each parent's group; the same rewards across groups would not move a skill-wide z-score.
    rewards = {"easy": [0.0, 1.0, 0.0, 1.0], "hard": [1.0, 0.0, 0.0, 0.0]}
    seen = {"easy": 0, "hard": 0}
    feedback = []
    for c in made:
        group = c.notes.group
        feedback.append(Feedback(c.candidate_id, rewards[group][seen[group]], True, c.lineage.operator))
        seen[group] += 1
    before = [p.detach().clone() for p in policy.model.parameters()]
    stats = designer.update(feedback)
    assert stats["designer_updates"] >= 1 and stats["designer_tokens_trained"] == chosen
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.model.parameters()))


def test_the_log_probs_recorded_for_an_edit_are_the_models_own_not_the_grammars(policy):
    # What a sampler records must be what the trainer computes for the same tokens: a sampler-trainer gap is read
    # as drift (vLLM's importance weights truncate it). The grammar only decides which tokens may be drawn.
    from spadegym.train.tokens import Sample

    designer = HFDesigner(policy, config=LLMDesignerConfig(mode="edit", edits_per_parent=2), corpus=None)
    made = asyncio.run(designer.propose(DesignContext(skill=CODES.skill, count=4, parents=parents())))
    batch = policy.batch([Sample(designer._traces[c.candidate_id].trace, 1.0, "designer") for c in made])
    with torch.no_grad():
        trainer = policy.logprobs_of(batch)
    trained = (batch["completion_mask"] * batch["tool_mask"]).bool()
    assert trained.any()
    gap = (trainer - batch["sampling_per_token_logps"])[trained].abs().max()
    assert float(gap) < 1e-4  # 5.5 nats when the grammar's renormalised log-probs were recorded


def test_in_the_loop_its_edits_are_judged_played_and_trained_on(tiny_dir, tmp_path):
    from spadegym.loop.config import validate_config
    from spadegym.loop.run import run
    from spadegym.store import RunStore

    config = validate_config({
        "agent": "learner", "designer": f"hf:{tiny_dir}", "rounds": 1, "seed": 0,
        "skills": [CODES.skill], "skills_per_round": 1, "envs_per_round": 4, "plays": 8, "hint_plays": 4,
        "group_size": 4, "heldout": {"every": 0, "levels": "easiest", "families": ["code_breaker"], "seeds": 1,
                                     "hint": False},
        "train": {"lr": 1e-2, "threads": 1, "gradient_checkpointing": False},
        "llm_designer": {"mode": "edit", "edits_per_parent": 4},
        "tensorboard": False})
    summary = run(config, out=tmp_path / "run", report=False).summaries[0].to_dict()
    learner = summary["learner"]
    # Four edits of one fresh level-0 parent of the skill (the buffer is empty), each a level the gate accepted.
    assert summary["proposals"] == 4 and summary["valid"] == 4 and learner["designer_valid_rate"] == 1.0
    assert learner["designer_updates"] == 1 and learner["designer_tokens_trained"] > 0
    with RunStore.open(tmp_path / "run") as store:
        rows = [store.environment(e) for e in store.load_state("buffer")["levels"]]
    skill_families = {f.name for f in list_families(CODES.skill)}
    for row in rows:
        assert row["family"] in skill_families and row["lineage"]["depth"] == 1
        assert row["lineage"]["operator"] in ("harder", "easier", "vary", "mixed")
