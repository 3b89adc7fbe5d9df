"""A pool packaged as an OpenEnv environment passes OpenEnv's own checks: its manifest parser, its deployment
check (all but the lock file, which needs an index) and, served from the package's own files, its runtime check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("spadegym.adapters.openenv_import")
from openenv.cli._validation import validate_multi_mode_deployment, validate_running_environment  # noqa: E402
from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser  # noqa: E402
from test_openenv import free_port  # noqa: E402

from spadegym.adapters import open_levels  # noqa: E402
from spadegym.adapters.openenv_package import write_package  # noqa: E402
from spadegym.errors import UserError  # noqa: E402

POOL = Path(__file__).resolve().parents[2] / "examples" / "pool"


def package(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", "serve", str(POOL), "--package", str(out), *extra],
                          capture_output=True, text=True, timeout=120)


def test_a_packaged_pool_is_an_openenv_environment_by_openenvs_own_checks(tmp_path: Path) -> None:
    out = tmp_path / "my-env"
    done = package(out, "--name", "my-env")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (out / "pool").iterdir()) == sorted(p.name for p in POOL.glob("*.py"))
    manifest = OpenEnvYamlParser().parse(out).model_dump()
    assert (manifest["name"], manifest["reward"]["range"], manifest["network"]["mode"]) == (
        "my-env", (0.0, 1.0), "no-network")
    ready, issues = validate_multi_mode_deployment(out)
    assert issues == ["Missing uv.lock - run 'uv lock' to generate it"]  # resolved against an index, by the user

    # The package's own server, from its own files: the copy of spadegym it carries, its pool.
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONPATH": str(out)}
    which = subprocess.run([sys.executable, "-c", "import spadegym; print(spadegym.__file__)"], cwd=out, env=env,
                           capture_output=True, text=True, timeout=60)
    assert Path(which.stdout.strip()).is_relative_to(out)
    server = subprocess.Popen([sys.executable, "server/app.py"], cwd=out, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # importing OpenEnv takes seconds, many on a loaded machine
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read() if server.stderr else ""
                time.sleep(0.25)
        report = validate_running_environment(url)
        assert report["passed"], [c for c in report["criteria"] if not c["passed"]]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_package_is_written_only_into_a_new_folder_with_a_plain_name(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep")
    with pytest.raises(UserError, match="not an empty folder"):
        write_package(open_levels(POOL), tmp_path / "taken", "my-env")
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep"
    with pytest.raises(UserError, match="environment name"):
        write_package(open_levels(POOL), tmp_path / "new", "../Up")
    assert not (tmp_path / "new").exists()
