"""Experiment trackers beside TensorBoard, chosen like TRL's report_to, all of them offline."""

from __future__ import annotations

import os
import re
import sqlite3
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from spadegym.loop import RunConfig, run
from spadegym.loop.trackers import chosen, installed

# Held out: two families' ends (in_distribution alone); the suites have their own tests.
TINY = {"envs_per_round": 2, "plays": 2, "hint_plays": 2, "group_size": 2, "skills_per_round": 2,
        "heldout": {"every": 0, "levels": "ends", "seeds": 1, "families": ["take_away", "code_breaker"]}}


def _child_commands(program: str) -> list[str]:
    """The command lines of this process's children that run ``program``."""
    commands = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and program in command:
            commands.append(command)
    return commands


def test_a_project_is_a_plain_name_and_a_space_is_owner_slash_name() -> None:
    for project in ("../outside", "a/b", "..", "x:y", ""):
        with pytest.raises(ValueError, match="project"):
            RunConfig(tracking={"project": project})
    with pytest.raises(ValueError, match="trackio_space"):
        RunConfig(tracking={"trackio_space": "https://example.org/x"})
    assert RunConfig(tracking={"project": "my-proj.v2", "trackio_space": "me/board"}).tracking.project == "my-proj.v2"


def test_report_to_names_trackers_as_trl_does() -> None:
    assert chosen(["tensorboard"]) == ["tensorboard"]
    assert chosen(["trackio", "wandb", "tensorboard"]) == ["tensorboard", "wandb", "trackio"]
    assert chosen(["none"]) == [] and chosen([]) == []
    assert chosen(["all"]) == [name for name in ("tensorboard", "wandb", "trackio") if installed(name)]
    with pytest.raises(ValueError, match="report_to"):
        RunConfig(report_to=["mlflow"])


def test_the_older_tensorboard_switch_loads_into_report_to():
    from spadegym.loop.config import RunConfig

    assert "tensorboard" not in RunConfig.model_fields  # one concept: report_to
    assert RunConfig(tensorboard=False).report_to == [] and RunConfig(tensorboard=True).report_to == []
    everything = RunConfig(tensorboard=False, report_to=["all"]).report_to
    assert "tensorboard" not in everything and "all" not in everything
    assert RunConfig(tensorboard=False, report_to=["tensorboard", "wandb"]).report_to == ["wandb"]


def test_wandb_and_trackio_get_every_round_offline(tmp_path, monkeypatch, capfd) -> None:
    for name in ("WANDB_MODE", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # auto mode: no key, so offline
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))  # read when trackio is first imported
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    pytest.importorskip("wandb")
    trackio_utils = pytest.importorskip("trackio.utils")
    project = f"spadegym-test-{uuid.uuid4().hex[:12]}"  # trackio's folder may outlive this test (imported earlier)
    out = tmp_path / "run"
    config = RunConfig(rounds=2, report_to=["wandb", "trackio"], tracking={"project": project}, **TINY)
    run(config, out, console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115

    assert not (out / "tensorboard").exists()  # not asked for
    [offline] = list((out / "wandb").glob("offline-run-*"))
    assert list(offline.glob("run-*.wandb"))  # the records `wandb sync` uploads later
    said = capfd.readouterr().err  # wandb's own account of the run as it closes it: history and summary
    history = said.split("Run history:")[1].split("Run summary:")[0]
    summary = said.split("Run summary:")[1]
    assert re.search(r"agent/episodes [▁▂▃▄▅▆▇█]{2}\n", history)  # two rounds, two points
    assert re.search(r"agent/episodes \d+\n", summary)

    # wandb's service ran without its error reporting, which connects out even offline.
    assert any("--no-observability" in command for command in _child_commands("wandb-core"))

    [database] = list(trackio_utils.TRACKIO_DIR.rglob(f"{project}.db"))
    with sqlite3.connect(database) as db:
        steps = sorted(row[0] for row in db.execute("select step from metrics"))
    assert steps == [0, 1]
