"""The HTML report: built only from the store, self-contained, graceful when data is absent."""

from __future__ import annotations

import re
import subprocess

import pytest
from synthetic_run import build_run

from spadegym.level import Level
from spadegym.report import REPORT_NAME, write_report
from spadegym.store import RunStore


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("report") / "run"
    build_run(run_dir, rounds=4).close()
    path = write_report(run_dir)
    return run_dir, path.read_text(encoding="utf-8")


def _headings(html: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", html)


def test_report_is_written_into_the_run_directory(full_report):
    run_dir, html = full_report
    assert (run_dir / REPORT_NAME).is_file()
    assert html.startswith("<!DOCTYPE html>")


def test_report_is_self_contained(full_report):
    _, html = full_report
    from spadegym.report.page import CSP, FILTER_SCRIPT

    # One script, constant text with no run data in it; the CSP lets that script alone run.
    assert re.findall(r"<script>(.*?)</script>", html, re.DOTALL) == [FILTER_SCRIPT] and html.count("<script") == 1
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)  # nothing fetched from the network
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert images and all(src.startswith("data:image/png;base64,") for src in images)


def test_report_has_every_section_and_plot_for_a_full_run(full_report):
    _, html = full_report
    assert _headings(html) == [
        "Overview",
        "Learning",
        "Regret and designer reward",
        "Curriculum: difficulty, skills, buffer",
        "Validity and refusals",
        "Throughput",
        "Rounds",
        "Environment browser",
        "Configuration",
    ]
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html)
    for caption in (
        "Win rate with and without hint",
        "Held-out success",
        "Held-out success by family",
        "Held-out success by level",
        "Hint regret (all environment-rounds)",
        "Designer reward",
        "Hint regret vs oracle regret",
        "Mean difficulty (level index) per family/knob",
        "Skill mix of new environments per round",
        "Valid share of proposals",
        "Refusal reasons (all rounds)",
        "Level buffer size",
        "Diversity: Vendi score per level (n-gram kernel)",
    ):
        assert caption in captions
    assert "Learnable-band fraction (no-hint win rate in [0.2, 0.8])" in captions
    assert len(re.findall(r"<img ", html)) == len(captions)


def test_a_pool_that_collapses_onto_a_few_games_is_flagged(full_report, tmp_path):
    _, healthy = full_report
    assert "The pool collapsed" not in healthy
    build_run(tmp_path / "run", rounds=8).close()  # three near-identical games, more of them every round
    with RunStore.open(tmp_path / "run") as store:
        flagged = [s["round"] for s in store.rounds() if s["diversity"]["collapsed"]]
    assert flagged and flagged == list(range(flagged[0], 9))
    html = write_report(tmp_path / "run").read_text(encoding="utf-8")
    assert f"<b>The pool collapsed</b> in {len(flagged)} round(s) (first: round {flagged[0]})" in html


def test_oracle_correlation_is_shown_as_a_number(full_report):
    run_dir, html = full_report
    with RunStore.open(run_dir) as store:
        pairs = [(r["regret"], r["oracle_regret"]) for r in store.scores() if r["oracle_regret"] is not None]
    match = re.search(
        r'over (\d+) environment-rounds where both exist: <span class="big">(-?[0-9.]+)</span>', html
    )
    assert match and int(match.group(1)) == len(pairs)
    assert -1.0 <= float(match.group(2)) <= 1.0


def test_environment_browser_lists_every_environment_with_escaped_code_and_transcripts(full_report):
    run_dir, html = full_report
    with RunStore.open(run_dir) as store:
        envs = store.environments()
    assert html.count('<details class="env">') == len(envs)
    first = html[html.index('<details class="env">') :]
    first = first[: first.index("</details>")]
    assert "class SequenceEnv:" in first or "class ArithEnv:" in first or "class MazeEnv:" in first
    assert "compare a &lt; b &amp; think twice" in first  # hint and code are escaped, never raw markup
    assert "&lt;in a box&gt;" in first and "<in a box>" not in html
    assert "Sample transcript: no hint" in first and "Sample transcript: with hint" in first
    assert "hint: compare a &lt; b" in first  # the hinted arm's observation carries the hint line


def test_a_run_with_no_complete_round_gets_an_informative_page(tmp_path):
    RunStore.create(tmp_path / "run", config={"rounds": 10}, versions={"spadegym": "0.1.0"}).close()
    html = write_report(tmp_path / "run").read_text()
    assert "No complete round yet" in html
    assert "<img" not in html
    assert _headings(html) == ["Overview", "Environment browser", "Configuration"]
    assert "&quot;rounds&quot;: 10" in html  # the config is shown


def test_summaries_with_few_keys_fall_back_to_the_scores_table(tmp_path):
    store = RunStore.create(tmp_path / "run", config={}, versions={})
    for n in (1, 2, 3):
        with store.round(n) as tx:
            tx.add_scores(
                [
                    {"env_id": "a", "win_rate": 0.1 * n, "win_rate_hint": 0.5, "regret": 0.5 - 0.1 * n},
                    {"env_id": "b", "win_rate": 0.9, "win_rate_hint": 0.9, "regret": 0.0},
                ]
            )
            tx.finish({"seconds": 1.0 + n})
    store.close()
    html = write_report(tmp_path / "run").read_text()
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html)
    assert "Win rate with and without hint" in captions  # derived from scores
    assert any(c.startswith("Learnable-band fraction") for c in captions)
    assert "Seconds per round" in captions
    assert "Held-out success" not in captions and "Skill mix of new environments per round" not in captions
    assert "summary keys not recorded by this run: win_rate" in html


def test_report_reads_only_complete_rounds_while_a_round_is_being_written(tmp_path):
    store = build_run(tmp_path / "run", rounds=2)
    with store.round(3) as tx:
        tx.add_environment("in-flight", Level("class XEnv: pass"))
        html = write_report(tmp_path / "run").read_text()
        tx.finish({})
    assert "in-flight" not in html
    assert '<div class="card"><b>2</b><span>complete rounds</span></div>' in html


def test_cli_report_writes_the_page_and_explains_a_missing_run(tmp_path):
    build_run(tmp_path / "run", rounds=1).close()
    ok = subprocess.run(["spadegym", "report", str(tmp_path / "run")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(tmp_path / "run" / REPORT_NAME)
    bad = subprocess.run(
        ["spadegym", "report", str(tmp_path / "run" / "checkpoints")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "does not exist" in " ".join(bad.stderr.split())


def test_markup_planted_in_a_stores_number_columns_stays_text(tmp_path):
    """SQLite columns take any type: a crafted store's 'round' holding markup must not become the page's HTML."""
    import sqlite3

    build_run(tmp_path / "run", rounds=2).close()
    planted = "<img src=x onerror=alert(1)>"
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        for table in ("environments", "proposals", "episodes", "scores"):
            db.execute(f"update {table} set round = ?", (planted,))
    html = write_report(tmp_path / "run").read_text(encoding="utf-8")
    assert planted not in html


def test_the_environment_browser_groups_levels_by_family_with_knobs_as_key_value_words(full_report):
    run_dir, html = full_report
    with RunStore.open(run_dir) as store:
        envs = store.environments()
    families = re.findall(r'<details class="family"><summary>([^ <]+) ', html)
    assert families == sorted({env["family"] for env in envs}) and '<details class="family" open' not in html
    env = envs[-1]
    words = " ".join(f"{key}={value}" for key, value in env["knobs"].items())
    assert f'<span class="tag">{words}</span>' in html  # not raw JSON
    assert '<input id="env-filter" type="search" hidden' in html  # shown by the script, useless without it
