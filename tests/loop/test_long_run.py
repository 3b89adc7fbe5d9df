"""``benchmarks/long_run.py`` runs: a few cheap rounds give its figures (the benchmark itself runs 1,000)."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "long_run.py"


def test_the_long_run_benchmark_measures_each_round_of_a_short_run(tmp_path):
    spec = importlib.util.spec_from_file_location("long_run", BENCHMARK)
    long_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(long_run)
    figures = long_run.long_run(2, 0, tmp_path / "run", report=False)
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0] == 2
    at = figures["by_round"]["2"]
    assert list(figures["by_round"]) == ["2"]  # rounds 10 and 100 are not reached
    assert at["seconds_per_round"] > 0 and at["cpu_s_per_round"] > 0
    assert 20 < at["rss_mb"] < 4096 and figures["store_mb"] == at["store_mb"] > 0
    assert figures["time_ratio_2_vs_2"] == 1.0 and figures["report_s"] is None
