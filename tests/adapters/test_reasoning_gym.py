"""reasoning-gym tasks as levels: curriculum attributes become knobs, files pass the gate, scoring agrees."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("reasoning_gym", reason="the reasoning-gym extra is not installed")

from reasoning_gym import factory  # noqa: E402

from spadegym.adapters import LevelSourceError, PlaySession, open_levels  # noqa: E402
from spadegym.adapters.reasoning_gym_levels import ReasoningGymLevels, render_level, task_knobs  # noqa: E402
from spadegym.sandbox import Sandbox, SandboxConfig  # noqa: E402
from spadegym.validate import validate_source  # noqa: E402

TASK = "basic_arithmetic"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A sandbox whose zygote imports reasoning_gym once, as a run with a reasoning-gym source has."""
    with Sandbox(SandboxConfig(preload=["reasoning_gym"])) as box:
        yield box


def test_curriculum_attributes_are_the_knobs_and_a_level_sets_each_to_its_step() -> None:
    knobs = task_knobs(TASK)
    assert knobs == {name: list(attr.levels) for name, attr in factory.create_curriculum(TASK).attributes.items()}
    easy, hard = render_level(TASK, 0, instances=4), render_level(TASK, 9, instances=4)
    assert easy.knobs == {"level": 0, **{name: levels[0] for name, levels in knobs.items()}}
    assert hard.knobs == {"level": 9, **{name: levels[-1] for name, levels in knobs.items()}}  # clipped
    assert easy.skill == "Mathematical Reasoning"


def test_every_level_passes_the_validation_gate(sandbox: Sandbox) -> None:
    for level in ReasoningGymLevels(TASK, levels=[0, 2], instances=8).levels():
        verdict = validate_source(level.source, level.filename, sandbox=sandbox)
        assert verdict.valid, [c.message for c in verdict.checks if not c.passed]


def test_the_sandboxed_level_scores_as_reasoning_gym_does_on_reference_and_wrong_answers(sandbox: Sandbox) -> None:
    instances = 6
    level = render_level(TASK, 1, instances=instances, seed=3)
    dataset = factory.create_dataset(TASK, seed=3, size=instances, **_range_fields(level.knobs))
    score = factory.get_score_answer_fn(TASK)
    source = open_levels(f"reasoning-gym:{TASK}")
    with PlaySession(_Fixed(level), sandbox=sandbox) as session:
        for i in range(instances):
            entry = dataset[i]
            assert entry["question"] in session.reset(seed=i).observation
            assert session.step(f"\\boxed{{{entry['answer']}}}").info["return"] == score(entry["answer"], entry) == 1.0
            session.reset(seed=i)
            assert session.step("\\boxed{not a number}").info["return"] == score("not a number", entry) == 0.0
    assert [lv.level_id for lv in source.levels()][:2] == [f"rg_{TASK}_0", f"rg_{TASK}_1"]


def _range_fields(knobs: dict) -> dict:
    """basic_arithmetic's knobs as its config's min/max fields (one step: min = max)."""
    return {"min_terms": knobs["num_terms"], "max_terms": knobs["num_terms"],
            "min_digits": knobs["num_digits"], "max_digits": knobs["num_digits"]}


class _Fixed:
    def __init__(self, level):
        self.level = level

    def levels(self):
        return [self.level]


def test_import_writes_a_pool_and_an_unknown_task_is_one_sentence(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "spadegym", "import", f"reasoning-gym:{TASK}", "--levels", "0,1",
                           "--instances", "4", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"rg_{TASK}_0.py", f"rg_{TASK}_1.py"]
    with pytest.raises(LevelSourceError, match="Did you mean 'basic_arithmetic'"):
        task_knobs("basic_arithmetik")



def test_partial_credit_is_the_tasks_own_score_and_every_reset_seed_is_a_fresh_instance(sandbox: Sandbox) -> None:
    task = "word_sorting"  # its score_answer gives partial credit for a partly sorted list
    level = render_level(task, 0, seed=5)
    namespace: dict = {}
    exec(compile(level.source, level.filename, "exec"), namespace)  # our own file, to know its instances here
    dataset, score = namespace["DATASET"], factory.get_score_answer_fn(task)
    seed = next(s for s in range(64, 200) if len(dataset[s]["answer"].split(", ")) > 2)
    entry = dataset[seed]
    swapped = entry["answer"].split(", ")
    swapped[0], swapped[-1] = swapped[-1], swapped[0]  # two words out of place
    partly = ", ".join(swapped)
    with PlaySession(_Fixed(level), sandbox=sandbox) as session:
        questions = {session.reset(seed=s).observation for s in (0, 1, 64, 65, 10_000)}
        assert len(questions) == 5  # fresh instances: seed 64 is not seed 0 again
        assert entry["question"] in session.reset(seed=seed).observation
        right = session.step(f"\\boxed{{{entry['answer']}}}").info
        session.reset(seed=seed)
        partial = session.step(f"\\boxed{{{partly}}}").info
    assert right["return"] == 1.0 and right["success"]
    assert 0 < partial["return"] < 1 and not partial["success"]
    assert partial["return"] == pytest.approx(score(partly, entry))


def test_a_verdict_does_not_time_the_import_of_reasoning_gym() -> None:
    """A cold import of reasoning_gym takes seconds of CPU, more on a busy machine; the sandbox imports it once,
    outside any budget, so a file's load is timed on what the file does: valid under a load limit of one second."""
    level = render_level(TASK, 0, instances=8)
    with Sandbox(SandboxConfig(load_timeout_s=1.0)) as cold:  # no preload: what `spadegym validate` starts with
        verdict = validate_source(level.source, level.filename, sandbox=cold)
    assert verdict.valid, [c.message for c in verdict.checks if not c.passed]
