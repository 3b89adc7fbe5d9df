"""What eval and export write for others (CI's JUnit reader, a browser, a terminal, the SPADE reference's pool
loader) holds for a suite whose names, skills and sources are hostile: valid output, never a crash."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spadegym.cli.eval_cmd import _print
from spadegym.families import get_family
from spadegym.redteam import Case, evaluate_suite, write_junit, write_scorecard
from spadegym.redteam.suite import MANIFEST, SUMS, FoundCase, export_suite, write_suite

SOURCE = get_family("take_away").render(get_family("take_away").level_knobs(0))
NAME = "suite\x1b]52;c;cGF3bmVk\x07\x1b[2J[blink]name[/blink]"
SKILL = "Logical\x00Deduction\x1b[31m\ud800\uffff" + "x" * 360
# A file that merely holds a remote level's descriptor markers, with settings no descriptor has.
MARKED = SOURCE + '\nOPENENV = {"url": "http://127.0.0.1:9", "bogus": 1}\n\n\nclass RemoteLevelEnv:\n    pass\n'


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    cases = [FoundCase(Case(id="c1", file="", skill="s", seeds=[1], family="take_away"), SOURCE, SOURCE),
             FoundCase(Case(id="c2\x1b[1A", file="", skill="s", seeds=[2]), MARKED, MARKED)]
    path = write_suite(folder / "suite", cases, {"target": "random", "seed": 0, "search": {}})
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["name"] = NAME
    for case in manifest["cases"]:
        case["skill"], case["cluster"] = SKILL, "cluster\uffff"
    (path / MANIFEST).write_text(json.dumps(manifest))  # json escapes the lone surrogate
    (path / SUMS).unlink()
    return path


@pytest.fixture(scope="module")
def results(hostile: Path) -> dict:
    return evaluate_suite(hostile, ["random"], plays=1)


def test_junit_of_a_hostile_suite_is_xml_a_ci_system_reads(results: dict, tmp_path: Path) -> None:
    root = ET.parse(write_junit(results, tmp_path / "junit.xml")).getroot()  # refused for one control character
    cases = root.findall(".//testcase")
    assert len(cases) == 2 and all("\x1b" not in c.get("name", "") for c in cases)
    assert "LogicalDeduction" in cases[0].get("classname", "")


def test_the_scorecard_of_a_hostile_suite_is_written_whole(results: dict, tmp_path: Path) -> None:
    page = write_scorecard(results, tmp_path / "card.html").read_text(encoding="utf-8")
    assert page.rstrip().endswith("</html>") and "\x1b" not in page and "\x00" not in page
    assert "LogicalDeduction\ufffd" in page and "[blink]" in page  # text, not markup of any kind


def test_evals_table_shows_a_hostile_suites_name_without_its_escape_sequences(results: dict,
                                                                               capsys: pytest.CaptureFixture) -> None:
    _print(results, None, None)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "[blink]name[/blink]" in out.replace("\n", "")


def test_a_spade_export_of_a_hostile_suite_names_its_files_within_limits_and_keeps_marked_files(
        hostile: Path, tmp_path: Path) -> None:
    pool = export_suite(hostile, "spade", tmp_path / "pool")
    games = sorted((pool / "games").iterdir())
    assert len(games) == 2 and all(len(g.name) < 100 for g in games)
    entries = [json.loads(line) for line in (pool / "manifest.jsonl").read_text().splitlines()]
    assert [e["file"] for e in entries] == [f"games/{g.name}" for g in games]  # the marked file is a file like any
