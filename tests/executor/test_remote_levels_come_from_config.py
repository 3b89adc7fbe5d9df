"""A file never decides where the host connects (issue 27.1): remote levels come only from a run's configuration.

The fixtures in ``tests/fixtures/hostile/remote/`` dress files as remote levels' descriptors that name a
port this test listens on. Nothing may ever connect to it: each file is gated and played in the sandbox
like any other, and malformed settings in a file are the gate's business, never a traceback.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from spadegym.errors import UserError
from spadegym.loop import RunConfig, load_config, run
from spadegym.store import RunStore, versions

REMOTE = Path(__file__).parents[1] / "fixtures" / "hostile" / "remote"
SKILL = "Logical Deduction"


class Listener:
    """A real socket on 127.0.0.1 that accepts, counts and closes every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def connections(self) -> int:
        """Connections made so far (the accepting thread is given a moment to take any still in the backlog)."""
        time.sleep(0.5)
        return self.accepted

    def close(self) -> None:
        self.sock.close()


@contextmanager
def listening() -> Iterator[Listener]:
    ear = Listener()
    try:
        yield ear
    finally:
        ear.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dressed(name: str, port: int) -> str:
    return (REMOTE / f"{name}.py").read_text().replace("PORT", str(port))


def test_validate_gates_files_dressed_as_remote_levels_in_the_sandbox_and_connects_nowhere(tmp_path: Path) -> None:
    with listening() as ear:
        for name in ("descriptor_game", "descriptor_malformed"):
            (tmp_path / f"{name}.py").write_text(dressed(name, ear.port))
        proc = subprocess.run([sys.executable, "-m", "spadegym", "validate", "--json", str(tmp_path)],
                              capture_output=True, text=True, timeout=300)
        assert ear.connections() == 0
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    game, malformed = (json.loads(line) for line in proc.stdout.splitlines())
    gate = {c["name"] for c in game["checks"]}
    assert game["valid"] and "deterministic" in gate and "reachable" not in gate  # the sandbox gate's checks
    assert Path(malformed["file"]).name == "descriptor_malformed.py" and not malformed["valid"]
    assert malformed["category"] and "reachable" not in {c["name"] for c in malformed["checks"]}


def test_in_a_run_with_a_remote_source_a_file_dressed_as_one_is_played_in_the_sandbox(tmp_path: Path) -> None:
    pytest.importorskip("spadegym.adapters.openenv_import", reason="the openenv extra is not installed")
    pool, out = tmp_path / "pool", tmp_path / "run"
    pool.mkdir()
    with listening() as ear:
        (pool / "descriptor_game.py").write_text(dressed("descriptor_game", ear.port))
        config = RunConfig(rounds=1, designer="pool", pool={"path": str(pool)}, agent="random", envs_per_round=1,
                           plays=2, hint_plays=0, group_size=2, skills=[SKILL], skills_per_round=1, tensorboard=False,
                           sources=[{"source": f"openenv:http://127.0.0.1:{closed_port()}"}],
                           heldout={"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"],
                                    "hint": False})
        run(config, out, report=False)
        assert ear.connections() == 0
    with RunStore.open(out) as store:
        [row] = store.environments()
        episodes = store.episodes(env_id=row["env_id"], split="train")
    assert row["kind"] == "file" and "OPENENV" in row["source"] and row["remote"] is None
    assert len(episodes) == 2 and all(e["failure"] is None and e["turns"] for e in episodes)


def test_malformed_settings_of_a_configured_remote_level_are_one_sentence() -> None:
    source = {"source": "openenv:http://127.0.0.1:8000", "max_turns": "many"}
    with pytest.raises(UserError, match=r"'sources\.0\.max_turns'") as caught:
        load_config(overrides={"sources": [source]})
    assert "\n" not in str(caught.value)
    with pytest.raises(UserError, match=r"'sources\.0\.reset_args'"):
        load_config(overrides={"sources": [{"source": "openenv:http://127.0.0.1:8000", "reset_args": ["level"]}]})


@pytest.mark.parametrize("url", ["", "ftp://127.0.0.1:8000", "http://127.0.0.1:99999", "http://[::1", "http://127.0.0.1:9\x00",
                                 "http://a host", "notaurl", "localhost"])
def test_a_configured_remote_level_url_no_connection_can_use_is_one_sentence(url: str) -> None:
    with pytest.raises(UserError, match=r"'sources\.0' the URL: ") as caught:
        load_config(overrides={"sources": [{"source": f"openenv:{url}"}]})
    assert "\n" not in str(caught.value)


def test_a_configured_remote_level_url_may_leave_out_http_and_trailing_slashes() -> None:
    config = load_config(overrides={"sources": [{"source": "openenv: 127.0.0.1:8000/ "}]})
    assert config.sources[0].remote_level_settings().url == "127.0.0.1:8000"


def test_a_config_file_naming_a_bare_word_as_a_remote_level_is_refused_when_read(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('[[sources]]\nsource = "openenv:notaurl"\n')
    proc = subprocess.run([sys.executable, "-m", "spadegym", "run", "--config", str(config), "--print-config"],
                          capture_output=True, text=True, timeout=120)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert said.startswith(f"error: {config}: 'sources.0' the URL: 'notaurl' is not an OpenEnv server's URL;")
    assert "e.g. http://127.0.0.1:8000" in said


def test_a_stored_run_naming_servers_connects_nowhere_when_opened_or_given_settings_resume_would_drop(
        tmp_path: Path) -> None:
    """A store written by anyone may name any address: reading it contacts none, a resume contacts a stored host
    only when the user names it, and a resume whose settings are refused stops before it builds the parts that
    would connect."""
    out = tmp_path / "run"

    def spadegym(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True, timeout=120)

    with listening() as ear:
        designer, source = f"openai:m@http://127.0.0.1:{ear.port}/v1", f"openenv:http://127.0.0.1:{ear.port}"
        config = RunConfig(rounds=2, designer=designer, agent="random",
                           sources=[{"source": source}]).model_dump(mode="json")
        RunStore.create(out, config, versions()).close()
        unnamed = spadegym("run", "--resume", str(out), "--print-config")
        shown = spadegym("run", "--resume", str(out), "--designer", designer, "--source", source, "--print-config")
        reported = spadegym("report", str(out))
        dropped = spadegym("run", "--resume", str(out), "--agent", "random", "--set", "plays=-1", "--no-report")
        negative = spadegym("run", "--resume", str(out), "--designer", designer, "--source", source,
                            "--rounds", "0", "--no-report")
        assert ear.connections() == 0
    assert unnamed.returncode == 2 and "a resumed run contacts only the hosts you name" in unnamed.stderr
    assert shown.returncode == 0 and json.loads(shown.stdout)["sources"][0]["source"].endswith(f":{ear.port}")
    assert reported.returncode == 0 and (out / "report.html").is_file()
    said = " ".join(dropped.stderr.split())
    assert dropped.returncode == 2 and "Traceback" not in dropped.stderr
    assert said.startswith(f"error: 'plays' cannot change a resumed run, which continues with the experiment "
                           f"stored in {out}") and said.endswith("drop the others, or start a new run with --out DIR.")
    assert negative.returncode == 2 and "'rounds' Input should be greater than or equal to 1" in negative.stderr
    with RunStore.open(out) as store:
        assert store.config == config and store.last_complete_round() is None  # the store is as it was written
