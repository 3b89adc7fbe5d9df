"""A stopped search keeps what it confirmed and resumes from its store (issue 62.1).

The target is an OpenAI-compatible server on 127.0.0.1 whose player fails three-pile take-away games
(as in test_redteam_cli). The search is stopped for real: a SIGINT sent to the process after its first
round, and a server the test shuts down mid-search; each time the suite holds the cases confirmed so far,
one line says how to resume, and the same command with --resume finishes the search.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from spadegym.redteam.suite import load_suite
from spadegym_testing.fake_players import NimPlayer
from spadegym_testing.fake_server import FakeOpenAIServer

WEAK = NimPlayer(blind_spot=lambda state: len(state.piles) >= 3)
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "300"}


def search(url: str, out: Path, *extra: str) -> list[str]:
    """A short search, one proposal a round, so that it is stopped between its first round and its end; a server
    that is gone is given up after one quick retry (the default's 7.5 s of backoff would only be waited out)."""
    return [sys.executable, "-m", "spadegym", "redteam", "--target", f"openai:weak@{url}", "--families", "take_away",
            "--budget", "3", "--per-round", "1", "--set", "space=listed", "--set", "minimise=false",
            "--set", "confirm_seeds=2", "--set", "llm.retries=1", "--set", "llm.backoff_s=0.05", "--out", str(out),
            "--json", *extra]


def here(argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` (a ``search`` command) through the same CLI in this process (typer's runner): a refusal without a
    fresh interpreter's imports."""
    from typer.testing import CliRunner

    from spadegym.cli import _register, app

    _register()
    result = CliRunner().invoke(app, argv[3:], env={"COLUMNS": "300"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # what a process would print as a traceback
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def first_round(proc: subprocess.Popen) -> dict[str, Any]:
    """The first round's JSON line (the suite is written before it is printed)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return json.loads(line)


def rounds(out: Path) -> list[int]:
    with sqlite3.connect(out / "hunt" / "run.sqlite") as db:
        return [r[0] for r in db.execute("SELECT round FROM rounds ORDER BY round")]


def test_ctrl_c_keeps_the_suite_says_one_line_and_the_search_resumes(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    with FakeOpenAIServer(WEAK) as server:
        proc = subprocess.Popen(search(server.url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ENV)
        try:
            first = first_round(proc)
            proc.send_signal(signal.SIGINT)  # what Ctrl-C sends, mid-search
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr
        [line] = [line for line in stderr.splitlines() if line.strip() and not line.startswith("spadegym redteam")]
        assert line.startswith(f"interrupted; the suite in {out} keeps the ") and "--resume" in line
        kept = load_suite(out)  # a whole suite, its checksums right: every case confirmed before the stop
        assert len(kept.cases) >= first["cases"] >= 1
        assert not kept.manifest["search"]["finished"]
        done_rounds = rounds(out)
        assert done_rounds[0] == 0

        # The plain command refuses the folder and says how to go on; --resume goes on from the store.
        again = here(search(server.url, out))
        assert again.returncode == 2 and "--resume" in again.stderr
        resumed = subprocess.run([*search(server.url, out), "--resume"], capture_output=True, text=True, env=ENV,
                                 timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    lines = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert lines[0]["round"] == done_rounds[-1] + 1  # it starts after the last round the store holds
    assert rounds(out) == list(range(len(rounds(out))))  # no round played twice
    final = load_suite(out)
    assert final.manifest["search"]["finished"] and final.manifest["search"]["proposals"] <= 3
    assert {c.cluster for c in kept.cases} <= {c.cluster for c in final.cases}
    assert all(c.knobs["piles"] == 3 for c in final.cases)


def test_a_server_gone_mid_search_keeps_the_suite_and_resumes_against_its_new_address(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    server = FakeOpenAIServer(WEAK).start()
    proc = subprocess.Popen(search(server.url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV)
    try:
        first = first_round(proc)
        server.stop()  # the model server goes away before the search ends
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr and f"The suite in {out} keeps the" in stderr and "--resume" in stderr
    assert len(load_suite(out).cases) >= first["cases"]
    with FakeOpenAIServer(WEAK) as moved:  # where the server is now: only the host differs
        resumed = subprocess.run([*search(moved.url, out), "--resume"], capture_output=True, text=True, env=ENV,
                                 timeout=180)
        other = here([*search(moved.url, out), "--resume", "--set", "plays=2"])
    assert resumed.returncode == 0, resumed.stderr
    assert load_suite(out).manifest["search"]["finished"]
    assert other.returncode == 2 and "begun with other settings ('plays')" in other.stderr
