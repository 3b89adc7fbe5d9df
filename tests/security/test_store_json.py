"""A run directory is data: JSON in its store that is nested too deep or inflates too far is one sentence from
every command that reads it (export, report, --print-config, learner:RUN), never a RecursionError or a memory spike."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spadegym.agents.registry import AGENTS
from spadegym.cli import _register, app
from spadegym.level import Level, Params
from spadegym.store import DB_NAME, RunStore, StoreError
from spadegym.store.learner_run import run_learner

SOURCE = '''"""A one-step game."""
SKILL = "Logical Deduction"


class OneStepEnv:
    def reset(self, seed=None):
        return "say yes", {}

    def step(self, action):
        return "done", float(action == "yes"), True, False, {}
'''
DEEP = "[" * 5000 + "]" * 5000


def small_run(run_dir: Path) -> Path:
    """One complete round: a level, two plays, a score and a summary, written through the store's API."""
    store = RunStore.create(run_dir, config={"rounds": 1, "agent": "learner"}, versions={"spadegym": "test"})
    with store, store.round(1) as tx:
        tx.add_proposal({"candidate_id": "c1", "source": SOURCE}, {"valid": True}, "env-1", valid=True)
        tx.add_environment("env-1", Level(SOURCE, "Logical Deduction", "say yes", Params("yes", {"n": 1})))
        tx.add_episodes([{"env_id": "env-1", "seed": s, "hinted": False, "ret": 1.0, "turns": [], "split": "train"}
                         for s in (1, 2)])
        tx.add_scores([{"env_id": "env-1", "win_rate": 1.0, "win_rate_hint": 1.0, "regret": 0.0, "plays": 2}])
        tx.finish({"win_rate": 1.0})
    return run_dir


def alter(run_dir: Path, sql: str, *args: object) -> None:
    db = sqlite3.connect(run_dir / DB_NAME)
    with db:
        db.execute(sql, args)
    db.close()


def cli(*args: str):
    _register()
    return CliRunner().invoke(app, list(args))


def assert_one_sentence(result, *words: str) -> None:
    """Refused with exit 2 and an `error:` line (typer's runner keeps any other exception in ``result.exception``)."""
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "error:" in result.output
    for word in words:
        assert word in " ".join(result.output.split())


@pytest.fixture
def deep_config(tmp_path: Path) -> Path:
    run = small_run(tmp_path / "run")
    alter(run, "UPDATE meta SET value = ? WHERE key = 'config'", DEEP)
    return run


@pytest.mark.parametrize("command", [["export"], ["report"], ["run", "--print-config", "--resume"]])
def test_a_deeply_nested_config_is_one_sentence(deep_config: Path, command: list[str]):
    assert_one_sentence(cli(*command, str(deep_config)), "nested", "altered")


def test_learner_of_a_run_with_a_deeply_nested_config_is_one_store_error(deep_config: Path):
    with pytest.raises(StoreError, match="nested 5000 levels deep"):
        run_learner(AGENTS.parse(f"learner:{deep_config}"))


def test_a_config_that_is_not_a_table_is_one_store_error(tmp_path: Path):
    run = small_run(tmp_path / "run")
    alter(run, "UPDATE meta SET value = '[1, 2]' WHERE key = 'config'")
    with pytest.raises(StoreError, match="not a table of settings"):
        RunStore.open(run)


@pytest.mark.parametrize("column", ["knobs", "lineage", "meta"])
def test_a_deeply_nested_level_column_is_one_sentence_in_export_and_report(tmp_path: Path, column: str):
    run = small_run(tmp_path / "run")
    alter(run, f"UPDATE environments SET {column} = ?", DEEP)
    assert_one_sentence(cli("export", str(run), "--what", "envs"), column, "nested")
    assert_one_sentence(cli("report", str(run)), "nested")


def test_a_deeply_nested_episode_is_one_sentence(tmp_path: Path):
    run = small_run(tmp_path / "run")
    alter(run, "UPDATE episodes SET data = ?", zlib.compress(DEEP.encode()))
    assert_one_sentence(cli("export", str(run), "--what", "episodes"), "episode", "nested")


def test_an_episode_that_inflates_past_any_record_is_refused_at_the_bound(tmp_path: Path):
    run = small_run(tmp_path / "run")
    alter(run, "UPDATE episodes SET data = ?", zlib.compress(b" " * (80 << 20), 1))  # 80 MB from about 80 KB
    with RunStore.open(run) as store, pytest.raises(StoreError, match="more than the 67,108,864 allowed"):
        store.episodes()


def test_a_deeply_nested_summary_or_score_is_one_store_error(tmp_path: Path):
    run = small_run(tmp_path / "run")
    alter(run, "UPDATE rounds SET summary = ?", DEEP)
    alter(run, "UPDATE scores SET extra = ?", DEEP)
    with RunStore.open(run) as store:
        with pytest.raises(StoreError, match="summary of round 1"):
            store.rounds()
        with pytest.raises(StoreError, match="score of env-1"):
            store.scores()
