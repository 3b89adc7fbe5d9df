"""Outputs never follow a planted link out of their folder and never delete what spadegym did not write; a dataset
card shows stored settings as escaped, bounded data; a push carries no absolute local path."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_store_json import assert_one_sentence, cli, small_run

from spadegym.adapters.reasoning_gym_levels import write_pool
from spadegym.outputs import OutputError
from spadegym.redteam import Case
from spadegym.redteam.suite import SuiteError, write_suite
from spadegym.store import DB_NAME, hub
from spadegym.store.card import dataset_card

SECRET = "the user's own file\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every output, holding a file and a Python file a link may point at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "bashrc").write_text(SECRET)
    (folder / "keep.py").write_text(SECRET)
    return folder


def untouched(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["bashrc", "keep.py"] and all(
        (outside / name).read_text() == SECRET for name in ("bashrc", "keep.py"))


def test_export_default_output_refuses_a_planted_file_link(tmp_path: Path, outside: Path):
    run = small_run(tmp_path / "run")
    (run / "exports").mkdir()
    (run / "exports" / "envs.jsonl").symlink_to(outside / "bashrc")
    assert_one_sentence(cli("export", str(run), "--what", "envs"), "envs.jsonl is a link")
    assert untouched(outside)


def test_export_default_output_refuses_a_planted_folder_link(tmp_path: Path, outside: Path):
    run = small_run(tmp_path / "run")
    (run / "exports").symlink_to(outside)
    assert_one_sentence(cli("export", str(run)), "exports is a link")
    assert untouched(outside)


def test_export_refuses_a_hard_link_to_a_file_elsewhere(tmp_path: Path, outside: Path):
    run = small_run(tmp_path / "run")
    (run / "exports").mkdir()
    os.link(outside / "bashrc", run / "exports" / "rounds.jsonl")
    assert_one_sentence(cli("export", str(run), "--what", "rounds"), "hard link")
    assert untouched(outside)


@dataclass
class _Level:
    filename: str
    source: str


class _Task:
    """Stands in for a reasoning-gym task: the levels ``write_pool`` writes."""

    def levels(self):
        return [_Level("chain_sum_0.py", "print('level')\n")]


def test_import_refuses_a_planted_link_in_its_out_folder(tmp_path: Path, outside: Path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "chain_sum_0.py").symlink_to(outside / "keep.py")
    with pytest.raises(OutputError, match="chain_sum_0.py is a link"):
        write_pool(_Task(), pool)
    assert untouched(outside)


def suite_cases() -> list:
    return [(Case(id="c1", file="", skill="s", seeds=[1]), "print('case')\n", "print('case')\n")]


def test_a_suite_never_deletes_through_a_linked_cases_folder(tmp_path: Path, outside: Path):
    out = tmp_path / "suite"
    out.mkdir()
    (out / "cases").symlink_to(outside)
    with pytest.raises(SuiteError, match="choose a new --out"):
        write_suite(out, suite_cases(), {"target": "random"})
    assert untouched(outside)


def test_a_suite_never_wipes_a_cases_folder_it_did_not_make(tmp_path: Path):
    out = tmp_path / "project"
    (out / "cases").mkdir(parents=True)
    (out / "cases" / "mine.py").write_text(SECRET)
    with pytest.raises(SuiteError, match="not an empty folder"):
        write_suite(out, suite_cases(), {"target": "random"})
    assert (out / "cases" / "mine.py").read_text() == SECRET


def test_redteam_refuses_a_cases_folder_it_did_not_make_before_searching(tmp_path: Path, outside: Path):
    out = tmp_path / "suite"
    out.mkdir()
    (out / "cases").symlink_to(outside)
    result = cli("redteam", "--target", "random", "--budget", "1", "--out", str(out))
    assert_one_sentence(result, "choose a new --out")
    assert untouched(outside) and not (out / "hunt").exists()


def test_the_dataset_card_shows_stored_settings_escaped_and_bounded():
    hostile = "</code><script>alert(1)</script>\n---\nlicense: stolen\n---\n```\n" + "x" * 200_000
    source = {"name": "run<img src=x onerror=alert(1)>", "kind": "a self-play run", "version": "0",
              "settings": {"designer": hostile, "agent": ["<b>", {"deep": "```` ``` `"}], "rounds": 3}}
    text = dataset_card({"envs": 1}, source, {"envs": "data/envs.parquet"})
    assert len(text) < 4_000
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert [n for n, line in enumerate(text.splitlines()) if line.strip() == "---"][2:] == []  # one front matter
    assert "license: stolen" not in text.splitlines()


def test_a_push_carries_no_absolute_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    run = small_run(tmp_path / "run")
    pool = tmp_path / "home" / "me" / "pool"
    db = sqlite3.connect(run / DB_NAME)
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'config'", (f'{{"pool": {{"path": "{pool}"}}}}',))
        db.execute("UPDATE environments SET meta = ?", (f'{{"file": "{pool}/games/a.py", "other": "/etc/x.py"}}',))
    db.close()
    pushed = {}
    monkeypatch.setattr(hub, "push_tables", lambda repo, tables, source, private, license: pushed.update(tables) or "url")
    hub.push_to_hub(run, "me/levels", tables=["envs"])
    assert [row["meta"] for row in pushed["envs"]] == [{"file": "games/a.py", "other": "x.py"}]
