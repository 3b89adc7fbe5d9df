"""A baseline is data: one of the wrong shape, or nested too deep, is one sentence before any case is played, and
a report file that cannot be written after every case was played leaves the results shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spadegym import redteam
from spadegym.cli import _register, app

ENV = Path(__file__).parent.parent / "fixtures" / "envs" / "number_guess.py"


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    folder = tmp_path / "pool"
    folder.mkdir()
    shutil.copy(ENV, folder / "guess.py")
    return folder


def evaluate(pool: Path, *args: str):
    _register()
    return CliRunner().invoke(app, ["eval", str(pool), "--agent", "random", *args])


def assert_one_sentence(result, *words: str) -> None:
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    flat = " ".join(result.output.split())
    for word in words:
        assert word in flat, flat


@pytest.mark.parametrize(("baseline", "words"), [
    ({"agents": ["random"]}, ["'agents' is a list"]),
    ({"agents": {"random": []}}, ["agent 'random' has no table of cases"]),
    ({"agents": {"random": {"cases": {"guess": True}}}}, ["case 'guess'", "'passed' true or false"]),
    ({"agents": {"random": {"cases": {"guess": {"passed": "yes"}}}}}, ["'passed' true or false"]),
])
def test_a_baseline_of_the_wrong_shape_is_refused_before_any_case_is_played(
        pool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baseline: dict, words: list[str]):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(baseline))
    played = []  # a refusal after playing would have spent the plays and lost their results
    monkeypatch.setattr(redteam, "evaluate_suite", lambda *args, **kwargs: played.append(args))
    assert_one_sentence(evaluate(pool, "--baseline", str(path)), "is not eval results", *words)
    assert played == []


def test_a_deeply_nested_baseline_is_one_sentence(pool: Path, tmp_path: Path):
    path = tmp_path / "baseline.json"
    path.write_text('{"agents": ' + "[" * 5000 + "]" * 5000 + "}")
    assert_one_sentence(evaluate(pool, "--baseline", str(path)), "nested 5001 levels deep")


def test_a_report_that_cannot_be_written_leaves_the_results_shown(pool: Path, tmp_path: Path):
    (tmp_path / "junit.xml").mkdir()  # a folder where the file should go
    result = evaluate(pool, "--json", "--junit", str(tmp_path / "junit.xml"), "--html", str(tmp_path / "card.html"))
    assert_one_sentence(result, "junit.xml was not written")
    results = json.loads(result.stdout.splitlines()[0])
    assert results["agents"]["random"]["cases"]["guess"]["plays"] >= 1
    assert (tmp_path / "card.html").read_text().startswith("<!doctype html>")
