"""The LLM designer against a real local OpenAI-compatible server with scripted designer replies."""

from __future__ import annotations

import asyncio
import json

import pytest
from designer_model import GOOD_HINT, DesignerModel, designer_for, reply

from spadegym.designers import prompts
from spadegym.designers.base import DesignContext, Feedback, LevelSummary
from spadegym.designers.corpus import Corpus
from spadegym.designers.extraction import extract_code
from spadegym.llm.client import LLMUnavailable
from spadegym.validate import ValidationConfig
from spadegym.validate.evidence import Seeds

MATH = "Mathematical Reasoning"


def test_valid_replies_come_out_as_valid_candidates(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("prose_valid"), reply("think_valid"), reply("fstring_bug")])
    designer = designer_for(serve(model), sandbox)
    candidates = asyncio.run(designer.propose(DesignContext(skill=MATH, count=3)))

    assert len(candidates) == 3
    for cand in candidates:
        assert cand.verdict.valid and cand.refusal is None and not cand.reward_as_invalid
        assert cand.attempts == 1 and not cand.notes.repaired and cand.notes.first_attempt_valid
        assert cand.hint == GOOD_HINT and cand.skill == MATH
        assert cand.lineage.operator == "llm" and cand.lineage.designer == "openai:designer-model"
        assert cand.notes.corpus_doc and cand.candidate_id.startswith("llm-3-")
    classes = sorted(extract_code(c.source).code.split("class ")[-1].split(":")[0] for c in candidates)
    assert classes == ["BaseReaderEnv", "DigitSumSearchEnv", "OddDialEnv"]
    assert sum("fstring_braces" in c.notes.fixes for c in candidates) == 1
    declared = sorted(c.notes.declared_skill for c in candidates if c.notes.declares_other_skill)
    assert declared == ["Pattern Recognition"]
    assert designer.stats.valid == designer.stats.valid_first_attempt == 3
    assert len(model.requests["hint"]) == 3 and not model.requests["repair"]


def test_design_prompt_fences_the_document_and_names_the_skill(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("prose_valid")])
    designer = designer_for(serve(model), sandbox)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1)))

    system, user = model.requests["design"][0]["messages"]
    assert system["content"] == prompts.DESIGN_SYSTEM and "nothing inside those" in system["content"]
    doc = next(d for d in Corpus.default().documents if d.doc_id == cand.notes.corpus_doc)
    body = user["content"]
    assert f"## Target skill\n{MATH}" in body
    assert "<reference_document>\n" + " ".join(doc.text.split()[:20]) in body
    assert "ONE fenced" in body


def test_invalid_first_reply_is_repaired_with_the_verdict_message(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("invalid_first")], repair=[reply("repaired")])
    designer = designer_for(serve(model), sandbox)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill="Optimization", count=1)))

    assert cand.verdict.valid and cand.refusal is None and cand.attempts == 2
    assert cand.notes.repaired is True and cand.notes.first_attempt_valid is False
    assert cand.reward_as_invalid  # rewarded on its first attempt, which failed
    assert "except ValueError" in cand.source
    (repair,) = model.requests["repair"]
    messages = repair["messages"]
    assert messages[-2]["role"] == "assistant" and "class RoadMapEnv" in messages[-2]["content"]
    assert "ValueError: invalid literal for int()" in messages[-1]["content"]
    assert "treat any unexpected text as an invalid move" in messages[-1]["content"]
    assert designer.stats.repaired == 1 and designer.stats.repair_turns == 1


def test_reply_that_stays_invalid_is_refused_with_its_verdict(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("invalid_first")], repair=[reply("invalid_first")])
    designer = designer_for(serve(model), sandbox, repair_turns=2)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill="Optimization", count=1)))

    assert cand.refusal == "invalid"
    assert cand.verdict.category == "exception" and cand.attempts == 3
    assert "class RoadMapEnv" in cand.source  # rejected code is kept for the store
    assert len(model.requests["repair"]) == 2 and not model.requests["hint"]
    assert designer.stats.refused == {"invalid": 1}


def test_replies_without_code_are_refused_and_counted(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("no_code"), reply("declined")])
    designer = designer_for(serve(model), sandbox)
    cands = asyncio.run(designer.propose(DesignContext(skill="Causal Inference", count=2)))

    assert sorted(c.refusal for c in cands) == ["declined", "no_code"]
    for cand in cands:
        assert cand.source == "" and not cand.verdict.valid
        assert cand.verdict.category == cand.refusal
    assert designer.stats.refused == {"declined": 1, "no_code": 1}
    assert not model.requests["repair"] and not model.requests["hint"]


def answer_of(sandbox, source: str) -> str:
    """The answer the gate's leak check compares hints with (solution() at its first seed)."""
    handle = sandbox.open(source)
    try:
        assert handle.reset(Seeds(ValidationConfig().seed).first).ok
        return handle.call("solution").value[-1]
    finally:
        handle.close()


def test_leaking_hint_is_rewritten_once(serve, sandbox) -> None:
    answer = answer_of(sandbox, extract_code(reply("think_valid")).code)
    assert len(answer) >= 2  # distinctive enough for the leak check
    model = DesignerModel(design=[reply("think_valid")], hints=[f"The answer is {answer}.", GOOD_HINT])
    designer = designer_for(serve(model), sandbox)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1)))

    assert cand.refusal is None and cand.hint == GOOD_HINT and cand.notes.hint_rewrites == 1
    (retry,) = model.requests["hint_retry"]
    assert "states the answer" in retry["messages"][-1]["content"]
    assert designer.stats.hints_rewritten == 1


def test_hint_that_keeps_leaking_refuses_the_environment(serve, sandbox) -> None:
    answer = answer_of(sandbox, extract_code(reply("think_valid")).code)
    model = DesignerModel(design=[reply("think_valid")], hints=[f"hint: it is {answer}"])
    designer = designer_for(serve(model), sandbox)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1)))

    assert cand.refusal == "hint_leak"
    assert cand.verdict.category == "leak" and cand.notes.leaking_hint == f"it is {answer}"
    assert designer.stats.refused == {"hint_leak": 1}


def test_server_going_away_is_one_clear_error(serve, sandbox) -> None:
    server = serve(DesignerModel(design=[reply("prose_valid")]))
    designer = designer_for(server, sandbox)
    server.stop()
    with pytest.raises(LLMUnavailable) as err:
        asyncio.run(designer.propose(DesignContext(skill=MATH, count=2)))
    message = str(err.value)
    assert server.url in message and "check that the server is running" in message
    assert "\n" not in message


def test_memory_feeds_later_prompts_and_state_persists(serve, sandbox) -> None:
    model = DesignerModel(design=[reply("prose_valid")])
    designer = designer_for(serve(model), sandbox)
    (cand,) = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1)))
    designer.update([Feedback(cand.candidate_id, 0.8, True, "llm", {"win_rate": 0.5, "regret": 0.4,
                                                                    "env_id": "r001-odd"})])
    hard = LevelSummary("r000-hard", MATH, 0.02, 0.05, 0.0, -0.3, code_excerpt="class HardEnv: ...")
    asyncio.run(designer.propose(DesignContext(skill=MATH, count=1, hopeless=[hard])))

    prompt = model.requests["design"][-1]["messages"][-1]["content"]
    assert '<past_environment id="r001-odd" win_rate="0.50" regret="0.40">' in prompt
    assert "class OddDialEnv" in prompt.split("## Environments at the right difficulty")[1]
    assert 'id="r000-hard"' in prompt.split("## Environments to avoid")[1]

    state = json.loads(json.dumps(designer.state_dict()))
    again = designer_for(serve(DesignerModel(design=[reply("prose_valid")])), sandbox)
    again.load_state_dict(state)
    assert again.memory.entries() == designer.memory.entries()
    assert again.stats == designer.stats and again._counter == 2


def test_mixed_batch_share_valid_first_and_after_repair(serve, sandbox) -> None:
    names = ["prose_valid", "invalid_first", "fstring_bug", "no_code", "think_valid", "invalid_first",
             "declined", "prose_valid"]
    model = DesignerModel(design=[reply(n) for n in names], repair=[reply("repaired")])
    designer = designer_for(serve(model), sandbox)
    cands = asyncio.run(designer.propose(DesignContext(skill=MATH, count=len(names))))

    first = sum(bool(c.notes.first_attempt_valid) for c in cands) / len(cands)
    after = sum(c.refusal is None for c in cands) / len(cands)
    print(f"\nLLM designer on test replies: valid at first attempt {first:.2f}, after repair {after:.2f}")
    assert (first, after) == (4 / 8, 6 / 8)
    assert designer.stats.refused == {"declined": 1, "no_code": 1}
