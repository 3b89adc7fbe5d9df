"""A run directory handed over may hold planted links: the store, the files SQLite keeps beside it, the report and
the checkpoints folder are written in place, so a link among them is refused and nothing outside changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_store_json import assert_one_sentence, cli, small_run

from spadegym.outputs import OutputError
from spadegym.store import DB_NAME, RunStore, StoreError

SECRET = "the user's own file\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A file outside the run directory that a planted link points at."""
    path = tmp_path / "outside.txt"
    path.write_text(SECRET)
    return path


@pytest.mark.parametrize("name", [f"{DB_NAME}-wal", f"{DB_NAME}-journal"])
def test_a_store_whose_sidecar_file_is_a_link_is_refused(tmp_path: Path, target: Path, name: str):
    run = small_run(tmp_path / "run")
    (run / name).symlink_to(target)
    with pytest.raises(StoreError, match="is a link"):
        RunStore.open(run)
    assert_one_sentence(cli("report", str(run)), "is a link")
    assert target.read_text() == SECRET


def test_the_report_is_never_written_through_a_planted_link(tmp_path: Path, target: Path):
    run = small_run(tmp_path / "run")
    (run / "report.html.tmp").symlink_to(target)
    assert_one_sentence(cli("report", str(run)), "is a link")
    assert target.read_text() == SECRET


def test_a_checkpoints_folder_that_links_out_is_refused_before_anything_in_it_is_deleted(tmp_path: Path):
    run = small_run(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "round-0001").mkdir(parents=True)  # what the loop deletes as an old checkpoint
    (run / "checkpoints").symlink_to(elsewhere, target_is_directory=True)
    with RunStore.open(run) as store, pytest.raises(OutputError, match="is a link"):
        store.checkpoint_dir  # noqa: B018
    assert (elsewhere / "round-0001").is_dir()


def test_a_run_directory_holding_a_link_is_not_resumed(tmp_path: Path, target: Path):
    """A resumed run writes event files, checkpoints and trackers' folders all over its directory: a link planted
    anywhere in it is refused before anything runs."""
    import subprocess
    import sys

    run = small_run(tmp_path / "run")
    (run / "tensorboard").mkdir()
    (run / "tensorboard" / "events").symlink_to(target)
    resumed = subprocess.run([sys.executable, "-m", "spadegym", "run", "--resume", str(run), "--rounds", "2"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 2 and "Traceback" not in resumed.stderr
    assert "is a link inside the run directory" in " ".join(resumed.stderr.split())
    assert target.read_text() == SECRET
