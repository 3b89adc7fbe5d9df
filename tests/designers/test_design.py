"""design(): a designer's proposals validated and written as a static pool (in process, LLM designer)."""

from __future__ import annotations

import json
from pathlib import Path

from designer_model import DesignerModel, designer_for, reply

from spadegym.designers.base import Level
from spadegym.designers.design import design, split_count


def test_split_count_spreads_evenly() -> None:
    assert split_count(5, ["a", "b"]) == [("a", 3), ("b", 2)]
    assert split_count(1, ["a", "b", "c"]) == [("a", 1)]


def test_design_writes_valid_and_rejected_environments(serve, sandbox, tmp_path: Path) -> None:
    model = DesignerModel(design=[reply("prose_valid"), reply("no_code"), reply("invalid_first"),
                                  reply("think_valid")], repair=[reply("invalid_first")])
    designer = designer_for(serve(model), sandbox, repair_turns=1)
    out = tmp_path / "pool"
    summary = design(designer, 4, ["Mathematical Reasoning", "Optimization"], out, sandbox)

    assert (summary.proposals, summary.valid, summary.repaired) == (4, 2, 0)
    assert summary.refused == {"exception": 1, "no_code": 1}
    valid = sorted(p.name for p in out.glob("*.py"))
    assert len(valid) == 2 and all(Path(f).exists() for f in summary.files)
    for name in valid:
        record = json.loads((out / name).with_suffix(".json").read_text())
        assert record["verdict"]["valid"] and record["hint"] and record["refusal"] is None
        assert record["lineage"]["designer"] == "openai:designer-model"
    rejected = sorted(p.name for p in (out / "rejected").iterdir())
    assert len([n for n in rejected if n.endswith(".py")]) == 1  # the invalid code; no code, no .py
    reasons = sorted(json.loads((out / "rejected" / n).read_text())["refusal"]
                     for n in rejected if n.endswith(".json"))
    assert reasons == ["exception", "no_code"]
    saved = json.loads((out / "summary.json").read_text())
    assert saved["valid"] == 2 and saved["designer_stats"]["refused"] == {"invalid": 1, "no_code": 1}
    assert saved["designer_stats"]["usage"]["completion_tokens"] > 0


def test_duplicates_are_refused(serve, sandbox, tmp_path: Path) -> None:
    model = DesignerModel(design=[reply("prose_valid")])
    designer = designer_for(serve(model), sandbox)
    summary = design(designer, 2, ["Mathematical Reasoning"], tmp_path, sandbox)
    assert (summary.valid, summary.refused) == (1, {"duplicate": 1})


def test_one_judge_names_refusals_and_drops_duplicates(sandbox) -> None:
    from spadegym.designers.base import Candidate
    from spadegym.designers.judge import Judge, refusal
    from spadegym.families import get_family
    from spadegym.validate.verdict import Verdict

    family = get_family("grid_maze")
    source = family.render(family.level_knobs(0))
    judge = Judge(sandbox, known=lambda code_hash: False)
    first, again = judge(Candidate(Level(source, family.skill)), "a"), judge(Candidate(Level(source, family.skill)), "b")
    assert first.valid and first.env_id == "a" and first.verdict.valid
    assert again.refusal == "duplicate" and again.env_id is None
    broken = judge(Candidate(Level("class BrokenEnv:\n    pass\n", family.skill)), "c")
    assert not broken.valid and broken.refusal == broken.verdict.category
    # A designer's own reason wins over the verdict's category, except its generic "invalid".
    leak = Verdict("x.py", False, "leak")
    assert refusal(Candidate(Level("", "s"), refusal="hint_leak"), leak) == "hint_leak"
    assert refusal(Candidate(Level("", "s"), refusal="invalid"), leak) == "leak"
    assert refusal(Candidate(Level("", "s")), Verdict("x.py", True, None)) is None


def test_a_caller_that_pays_for_the_gate_is_spared_the_calls_one_rule_refuses_anyway() -> None:
    """The loop, whose gate ran on the whole batch, refuses only codes accepted before; a caller that passes its
    gate (the red team) is spared the call for a file with no code or with code judged before, valid or not."""
    from spadegym.designers.base import Candidate
    from spadegym.designers.judge import Judge
    from spadegym.validate.verdict import Verdict

    leak, fine = Verdict("x.py", False, "leak"), Verdict("x.py", True, None)
    loop = Judge(known=lambda code_hash: False)
    assert loop(Candidate(Level("code", "s")), "a", leak).refusal == "leak"
    assert loop(Candidate(Level("code", "s")), "b", fine).valid  # another hint may pass where one leaked
    assert loop(Candidate(Level("code", "s")), "c", fine).refusal == "duplicate"

    asked: list[str] = []

    def gate(candidate: Candidate, name: str) -> Verdict:
        asked.append(name)
        return leak

    paying = Judge(known=lambda code_hash: code_hash == Level("pooled", "s").code_hash)
    assert paying(Candidate(Level("code", "s")), "a", gate=gate).refusal == "leak"
    again = paying(Candidate(Level("code", "s")), "b", gate=gate)
    pooled = paying(Candidate(Level("pooled", "s")), "c", gate=gate)
    empty = paying(Candidate(Level("", "s"), refusal="declined"), "d", gate=gate)
    assert (again.refusal, pooled.refusal, empty.refusal) == ("duplicate", "duplicate", "declined")
    assert again.verdict is None and asked == ["a"]
