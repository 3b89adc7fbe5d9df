"""TRL's GRPOTrainer under accelerate, two processes, on one live curriculum: killed, then resumed.

One test covers the whole contract, because each launch costs half a minute of imports: the example script
(examples/trl_curriculum.py, the docs' own) is launched as a user launches it, killed with SIGKILL once its
first round is committed, and launched again on the same run directory.

accelerate 1.16 runs ``--cpu`` through its one-process launcher whatever ``--num_processes`` says; two CPU
processes come from ``--multi_gpu --num_processes 2`` on a machine without GPUs (torchrun, gloo).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytest.importorskip("trl", reason="the train extra (trl) is not installed")
pytest.importorskip("accelerate")

from spadegym.store import RunStore, StoreError  # noqa: E402

ROOT = Path(__file__).parents[2]
CONFIG = ROOT / "examples" / "configs" / "curriculum.toml"
SCRIPT = str(ROOT / "examples" / "trl_curriculum.py")
#: A round: 2 levels x (1 no-hint + 1 hinted group) x 2 generations (examples/configs/curriculum.toml).
PLAYS_PER_ROUND = 8
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def tiny_model(tmp_path: Path) -> Path:
    from test_trl_env import tiny_tool_caller

    model, tokenizer = tiny_tool_caller()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    return tmp_path / "model"


def _env() -> dict[str, str]:
    # The user's TRL script: its usage ping is off, as a user who runs offline sets it; no GPU is used.
    return {
        **os.environ,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
    }


def _launch(port: int) -> list[str]:
    return [
        str(Path(sys.executable).parent / "accelerate"),
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--main_process_port",
        str(port),
        SCRIPT,
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _committed(run: Path) -> int | None:
    try:
        with RunStore.open(run) as store:
            return store.last_complete_round()
    except (StoreError, sqlite3.Error):  # not made yet, or being made
        return None


def test_two_accelerate_processes_train_on_one_curriculum_which_survives_a_kill(
    tmp_path: Path, tiny_model: Path
):
    run = tmp_path / "run"
    args = [str(tiny_model), "--config", str(CONFIG), "--out", str(run)]

    # Launch 1, killed (SIGKILL, the launcher and every process under it) as soon as its first round is stored.
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(
        [*_launch(_free_port()), *args, "--max-steps", "12"],
        cwd=ROOT,
        env=_env(),
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 600
    while _committed(run) is None and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    # torchrun's workers are not in the launcher's process group: each process of the tree is killed.
    tree = psutil.Process(first.pid).children(recursive=True)
    for process in [psutil.Process(first.pid), *tree]:
        process.kill()
    first.wait()
    psutil.wait_procs(tree, timeout=60)
    err = (tmp_path / "first.log").read_text()
    killed_at = _committed(run)
    assert killed_at is not None, err[-3000:]

    # Launch 2 on the same run directory: the curriculum resumes from the store.
    done = subprocess.run(
        [*_launch(_free_port()), *args, "--max-steps", "2"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "`gradient_checkpointing` is deprecated" not in done.stderr  # the example uses the current name
    [line] = [ln for ln in done.stdout.splitlines() if ln.startswith("curriculum: ")]
    counts = json.loads(line.removeprefix("curriculum: "))
    # No play's feedback lost or counted twice: every draw was reported, once.
    assert counts["drawn"] == counts["reported"] == PLAYS_PER_ROUND and counts["duplicates"] == 0
    assert counts["rounds_closed"] == 1

    with RunStore.open(run) as store:
        rounds = [r["round"] for r in store.rounds()]
        episodes = store.episodes(split="train")
    # The rounds are recorded in order, the killed launch's and the resumed one's.
    assert rounds == list(range(len(rounds))) and len(rounds) > killed_at + 1
    refs = [e["trace_ref"] for e in episodes]
    assert len(set(refs)) == len(refs)  # one stored episode per play
    for n in rounds:
        assert sum(e["round"] == n for e in episodes) == PLAYS_PER_ROUND
    launches = {
        n: {r.split()[2].split(":")[1] for r in refs if r.split()[2].startswith(f"{n}:")} for n in rounds
    }
    assert all(len(ids) == 1 for ids in launches.values())
    assert launches[rounds[-1]] != launches[0]  # the resumed launch played on; the killed one's rounds stayed
    resumed = [e for e in episodes if e["round"] > killed_at]
    # Both processes played curriculum draws, and the designer's levels of later rounds reached the trainer.
    assert {" ".join(e["trace_ref"].split()[:2]) for e in resumed} == {"process 0", "process 1"}
    assert any(e["env_id"].startswith(f"r{e['round']:03d}-") for e in resumed)
    assert {e["hinted"] for e in resumed} == {False, True}
    # It is the run store `spadegym run` writes: the report reads it (the command, in this process: the launches
    # are the processes this test is about, and a fresh interpreter would only import the report's libraries again).
    from typer.testing import CliRunner

    from spadegym.cli import _register, app

    _register()
    report = CliRunner().invoke(app, ["report", str(run)])
    assert report.exception is None or isinstance(report.exception, SystemExit), report.exception
    assert report.exit_code == 0 and (run / "report.html").is_file(), report.stderr[-2000:]
