"""Red-teaming a target with a planted weakness, end to end through the CLI.

The target is an OpenAI-compatible server on 127.0.0.1 whose player plays the
take-away game optimally except in three-pile games. ``redteam`` must find
that weakness, cluster it, shrink it, and write a suite that ``eval`` scores:
the fixed player passes it, the weak one fails it, as the JUnit XML says.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spadegym.families import get_family
from spadegym_testing.fake_players import NimPlayer
from spadegym_testing.fake_server import FakeOpenAIServer

WEAK = NimPlayer(blind_spot=lambda state: len(state.piles) >= 3)
FIXED = NimPlayer()


def players(request: dict[str, Any], index: int) -> str:
    """One server, two targets: the request's model name picks the player."""
    return (WEAK if request.get("model") == "weak" else FIXED)(request, index)


def spadegym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True, timeout=180,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})


def spadegym_here(*args: str) -> subprocess.CompletedProcess:
    """The same command line run in this process (typer's runner): its exit status, stdout and stderr, without a
    fresh interpreter's imports (seconds each) for every command after the search and the first eval, which run
    as processes."""
    from typer.testing import CliRunner

    from spadegym.cli import _register, app

    _register()
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # what a process would print as a traceback
    return subprocess.CompletedProcess(["spadegym", *args], result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(players) as s:
        yield s


@pytest.fixture(scope="module")
def suite(server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("redteam") / "nim-suite"
    done = spadegym("redteam", "--target", f"openai:weak@{server.url}", "--families", "take_away",
                    "--budget", "12", "--per-round", "4", "--set", "space=listed", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    # The search stops once no open level is left (every take-away game is judged or repeats a known failure).
    assert [s["round"] for s in lines[:-1]] == list(range(len(lines) - 1)) and lines[-1]["cases"] >= 1
    assert lines[-1]["proposals"] <= 12 and lines[-2]["proposals"] == 0
    return out


def test_redteam_finds_clusters_and_shrinks_the_planted_weakness(suite: Path) -> None:
    manifest = json.loads((suite / "manifest.json").read_text())
    cases = manifest["cases"]
    assert cases, "no case found"
    # Every case exhibits the weakness (three piles), and one failure is one cluster, not many.
    assert all(c["knobs"]["piles"] == 3 for c in cases)
    assert len({c["cluster"] for c in cases}) == len(cases)
    search = manifest["search"]
    assert search["failures"] + search["avoided"] > len(cases)  # repeats of the bug: avoided or counted, never kept
    # The search steered its budget by what each skill yielded; a new failure counts 1.
    assert search["allocation"]["Mathematical Reasoning"]["tried"] == search["proposals"]
    assert search["allocation"]["Mathematical Reasoning"]["found"] >= 1
    first = cases[0]
    # Shrunk: smaller than the level first found, with every other knob at its easiest value.
    assert first["size"] < first["original_size"]
    easiest = get_family("take_away").level_knobs(0)
    assert {**first["knobs"], "variant": 0} == {**easiest, "piles": 3}
    assert (suite / first["original_file"]).read_text() != (suite / first["file"]).read_text()
    # Flakiness measured on fresh seeds: a real failure, with its interval.
    low, high = first["failure_interval"]
    assert first["failure_rate"] >= 0.5 and 0.3 <= low <= first["failure_rate"] <= high
    assert first["solution_return"] == 1.0 and "take 1 from pile x" in first["transcript"]
    assert len(first["seeds"]) == 4
    # The suite stands alone: checksums of every file, a card for humans, standard-library files.
    sums = (suite / "SHA256SUMS").read_text()
    assert "manifest.json" in sums and "README.md" in sums and first["file"] in sums
    assert first["id"] in (suite / "README.md").read_text()
    assert (suite / "hunt" / "run.sqlite").exists()
    again = spadegym_here("redteam", "--target", "random", "--families", "take_away", "--out", str(suite))
    assert again.returncode == 2 and "already holds a suite" in again.stderr  # never overwritten


def test_a_search_whose_suite_is_full_stops_and_says_how_to_keep_more(server: FakeOpenAIServer, tmp_path: Path) -> None:
    out = tmp_path / "full"
    done = spadegym("redteam", "--target", f"openai:weak@{server.url}", "--families", "take_away", "--budget", "12",
                    "--per-round", "4", "--set", "space=listed", "--set", "max_cases=1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert len(json.loads((out / "manifest.json").read_text())["cases"]) == 1
    assert "The suite is full (max_cases = 1): the search stopped after 4 of 12 proposals" in done.stdout


@pytest.fixture(scope="module")
def scored(server: FakeOpenAIServer, suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both players scored on the suite in one eval: JSON, JUnit XML and the HTML scorecard."""
    folder = tmp_path_factory.mktemp("eval")
    junit, html = folder / "results.xml", folder / "scorecard.html"
    weak, fixed = f"openai:weak@{server.url}", f"openai:fixed@{server.url}"
    done = spadegym("eval", str(suite), "--agent", weak, "--agent", fixed, "--junit", str(junit),
                    "--html", str(html), "--json")
    assert done.returncode == 0, done.stderr
    return {"results": json.loads(done.stdout), "junit": junit, "html": html, "weak": weak, "fixed": fixed}


def test_eval_passes_the_fixed_agent_and_fails_the_weak_one_in_junit(scored: dict[str, Any]) -> None:
    results, weak, fixed = scored["results"], scored["weak"], scored["fixed"]
    assert results["agents"][fixed]["pass_rate"] == 1.0 and results["agents"][weak]["pass_rate"] == 0.0

    root = ET.parse(scored["junit"]).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    n = len(results["cases"])
    assert suites[weak].get("tests") == str(n) and suites[weak].get("failures") == str(n)
    assert suites[fixed].get("failures") == "0"
    failed = [c for c in suites[weak].iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failed} == set(results["cases"])
    assert "won 0/" in failed[0].find("failure").get("message")
    assert all(c.find("failure") is None for c in suites[fixed].iter("testcase"))
    page = scored["html"].read_text()
    assert "Per skill" in page and "Per cluster" in page and weak in page and fixed in page


def test_eval_exit_codes_gate_ci_on_the_baseline_and_the_pass_rate(scored: dict[str, Any], suite: Path,
                                                                   tmp_path: Path) -> None:
    weak, fixed = scored["weak"], scored["fixed"]
    baseline = tmp_path / "fixed.json"  # an earlier run in which only the fixed player was scored
    baseline.write_text(json.dumps({**scored["results"], "agents": {fixed: scored["results"]["agents"][fixed]}}))
    # The weak player fails cases the baseline passed, and falls below the pass rate: exit 1, both said.
    worse = spadegym_here("eval", str(suite), "--agent", weak, "--baseline", str(baseline), "--min-pass-rate", "0.5",
                     "--json")
    assert worse.returncode == 1
    assert "regression(s) against the baseline" in worse.stderr and "below --min-pass-rate 0.5" in worse.stderr
    assert json.loads(worse.stdout)["regressions"][weak] == scored["results"]["cases"]
    same = spadegym_here("eval", str(suite), "--agent", fixed, "--baseline", str(baseline), "--min-pass-rate", "0.9")
    assert same.returncode == 0, same.stderr
    assert "1.00" in same.stdout
    assert json.loads(worse.stdout)["fixed"][weak] == []
    # Against the weak player's results, every case is one the baseline failed and the fixed player passes now.
    before = tmp_path / "weak.json"
    before.write_text(json.dumps({**scored["results"], "agents": {weak: scored["results"]["agents"][weak]}}))
    better = spadegym_here("eval", str(suite), "--agent", fixed, "--baseline", str(before), "--json")
    assert better.returncode == 0, better.stderr
    assert json.loads(better.stdout)["fixed"][fixed] == scored["results"]["cases"]


def test_a_suite_exported_as_a_pool_is_scored_as_a_pool_directory(server: FakeOpenAIServer, suite: Path,
                                                                   tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    exported = spadegym_here("export", str(suite), "--format", "spade", "--out", str(pool))
    assert exported.returncode == 0, exported.stderr
    weak, fixed = f"openai:weak@{server.url}", f"openai:fixed@{server.url}"
    done = spadegym_here("eval", str(pool), "--agent", weak, "--agent", fixed, "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    cases = json.loads((suite / "manifest.json").read_text())["cases"]
    assert len(results["cases"]) == len(cases)  # every case file of the pool, on seeds 0-3
    assert results["agents"][fixed]["pass_rate"] == 1.0 and results["agents"][weak]["pass_rate"] == 0.0
