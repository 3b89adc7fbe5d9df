"""``benchmarks/llm_curriculum.py`` end to end with the tiny model: every arm trains, every suite is scored.

It must run, not learn: the figures' shape, equal training budgets and a resumed study are what it checks.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

#: Five training runs of the tiny model: about a minute of CPU, several on a shared, loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "llm_curriculum.py"


def load_benchmark(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARK.parent))  # its shared statistics module (benchmarks/paired.py)
    spec = importlib.util.spec_from_file_location("llm_curriculum", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_arm_trains_the_same_episodes_and_is_scored_on_every_suite(tiny_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    bench = load_benchmark(monkeypatch)
    results = tmp_path / "study.jsonl"
    common = ["--model", str(tiny_dir), "--rounds", "1", "--envs", "1", "--plays", "2", "--hint-plays", "1",
              "--heldout-seeds", "1", "--max-new-tokens", "2", "--threads", "1", "--families",
              "number_sequence,rule_sorter", "--unseen", "rule_sorter", "--results", str(results), "--json"]
    assert bench.main(["--arms", ",".join(bench.ARMS), "--seeds", "1", *common]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(first) >= {"model", "device", "seeds", "success_by_arm_and_suite", "ratio_by_suite", "ci95_by_suite"}
    assert first["model"] == Path(tiny_dir).name and first["seeds"] == [0]
    assert set(first["success_by_arm_and_suite"]) == set(bench.ARMS)
    for arm, suites in first["success_by_arm_and_suite"].items():
        assert set(suites) == set(bench.SUITES), arm
        assert all(v is not None and 0.0 <= v <= 1.0 for v in suites.values()), (arm, suites)
    episodes = {arm: cost["episodes"] for arm, cost in first["cost_by_arm"].items()}
    assert set(episodes.values()) == {1 * 1 * (2 + 1)}, episodes  # rounds x envs x (plays + hint plays), every arm
    assert all(cost["tokens"] > 0 and cost["seconds"] > 0 for cost in first["cost_by_arm"].values())
    assert set(first["ratio_by_suite"]) == set(bench.SUITES) == set(first["ci95_by_suite"])
    assert first["best_fixed_by_suite"]["frontier"] in bench.FIXED

    # The same study again: every run is kept in the results file, so nothing trains twice and the figures hold.
    kept = results.read_text()
    assert len([line for line in kept.splitlines() if '"arm"' in line]) == len(bench.ARMS)
    assert bench.main(["--arms", "fixed_levels,adaptive", "--seeds", "1", *common]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert results.read_text() == kept
    assert again["success_by_arm_and_suite"]["adaptive"] == first["success_by_arm_and_suite"]["adaptive"]

def test_a_results_file_of_other_settings_is_refused(tiny_dir, tmp_path, monkeypatch):
    bench = load_benchmark(monkeypatch)
    results = tmp_path / "study.jsonl"
    results.write_text(json.dumps({"study": {"rounds": 99}}) + "\n")
    with pytest.raises(SystemExit, match="other settings"):
        bench.main(["--model", str(tiny_dir), "--results", str(results)])


def test_paired_intervals_need_one_value_per_seed_on_both_sides(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARK.parent))
    from paired import paired

    assert paired([0.5, 0.7, 0.6], [0.4, 0.5, 0.6])["ci95"][0] < 0.1 < paired([0.5, 0.7, 0.6], [0.4, 0.5, 0.6])["ci95"][1]
    with pytest.raises(ValueError, match="one value per seed"):
        paired([0.5], [0.4, 0.5])
