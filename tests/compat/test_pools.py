"""SPADE pools both ways: export a real run in the reference's layout, and play, learn, validate and
run on a pool directory (nested as the published dumps are)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from spadegym.curriculum import BufferConfig
from spadegym.families import get_family
from spadegym.loop import RunConfig, run
from spadegym.sandbox import Sandbox
from spadegym.store import RunStore
from spadegym.store.export import export_run

REFERENCE = Path(__file__).parents[1] / "fixtures" / "reference"
# Held out: two families' ends (in_distribution alone); the suites have their own tests.
TINY = {"envs_per_round": 4, "plays": 4, "hint_plays": 4, "group_size": 4, "tensorboard": False,
        "heldout": {"every": 0, "levels": "ends", "seeds": 1, "families": ["take_away", "code_breaker"]}}


def spadegym(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True,
                          timeout=240, cwd=cwd)


def spadegym_here(*args: str) -> subprocess.CompletedProcess:
    """The same command line run in this process (typer's runner): its exit status, stdout and stderr, without a
    fresh interpreter's imports for each refusal (each test runs its command once as a process)."""
    from typer.testing import CliRunner

    from spadegym.cli import _register, app

    _register()
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # what a process would print as a traceback
    return subprocess.CompletedProcess(["spadegym", *args], result.exit_code, result.stdout, result.stderr)


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"))  # noqa: SIM115


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pool")
    run(RunConfig(rounds=2, seed=3, **TINY), root / "run", console=quiet(), report=False)
    (folder,) = export_run(root / "run", "spade", out=root / "spade")
    return root / "run", folder


def test_an_exported_run_has_the_reference_layout(exported):
    run_dir, folder = exported
    games = sorted(folder.glob("games/game_*.py"))  # what the reference's pool loader globs
    manifest = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    with RunStore.open(run_dir) as store:
        assert len(games) == len(manifest) == len(store.environments(valid_only=True)) > 0
    for entry in manifest:
        assert re.fullmatch(r"games/game_\d{5}_\d{3}_[a-z_]+\.py", entry["file"])
        assert entry["sha256"] == hashlib.sha256((folder / entry["file"]).read_bytes()).hexdigest()
    checked = subprocess.run(["sha256sum", "-c", "checksums.sha256"], cwd=folder, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_exported_environment_is_won_under_the_reference(exported, sandbox: Sandbox, tmp_path):
    """A real run's export, played by the emulation of the reference's loader and rollout."""
    from test_spade_export import EMULATION, SEED, replies

    _run_dir, folder = exported
    games = sorted(folder.glob("games/game_*.py"))
    plays = [{"path": str(path), "seed": SEED, "replies": replies(sandbox, path.read_text(), path.name)}
             for path in games]
    (tmp_path / "plays.json").write_text(json.dumps(plays))
    done = subprocess.run([sys.executable, str(EMULATION), str(tmp_path / "plays.json")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(outcomes) == len(games) > 0
    assert all(o["loaded"] and o["return"] == 1.0 for o in outcomes), outcomes


def nested_pool(tmp_path: Path, *names: str) -> Path:
    pool = tmp_path / "dump"
    for i, name in enumerate(names):
        target = pool / "games" / f"gen_{i:04d}" / f"game_{i:05d}_000_{name}.py"
        target.parent.mkdir(parents=True)
        shutil.copy(REFERENCE / f"{name}.py", target)
    return pool


def test_validate_recurses_into_a_nested_pool_and_refuses_an_empty_one(tmp_path):
    pool = nested_pool(tmp_path, "boxed_strict", "menu_only")
    proc = spadegym("validate", str(pool), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(proc.stdout.splitlines()) == 2
    (tmp_path / "empty").mkdir()
    empty = spadegym_here("validate", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "no environment files (*.py) found" in empty.stderr


def test_play_a_pool_directory_and_fail_when_every_episode_fails(tmp_path):
    pool = nested_pool(tmp_path, "boxed_strict", "menu_only")
    proc = spadegym("play", str(pool), "--episodes", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 4 and {Path(x["env"]).parent.name for x in lines} == {"gen_0000", "gen_0001"}
    crash = tmp_path / "crash.py"
    crash.write_text("class CrashEnv:\n    def reset(self, seed=None):\n        return 'go', {}\n"
                     "    def step(self, action):\n        raise KeyError(action)\n")
    failed = spadegym_here("play", str(crash), "--episodes", "2")
    assert failed.returncode == 1 and "every episode failed (2 exception)" in failed.stderr


def test_run_on_a_pool_alone_replays_it_and_as_seed_levels_goes_on_with_the_designer(tmp_path):
    pool = tmp_path / "pool" / "gen_0000"
    pool.mkdir(parents=True)
    for name in ("grid_maze", "knapsack"):
        family = get_family(name)
        (pool / f"game_00000_000_{name}.py").write_text(family.render(family.level_knobs(0)))
    sources = {p.read_text() for p in pool.glob("*.py")}

    fixed = run(RunConfig(rounds=2, designer="pool", pool={"path": str(tmp_path / "pool")}, **TINY),
                tmp_path / "fixed",
                console=quiet(), report=False)
    with RunStore.open(tmp_path / "fixed") as store:
        assert {e["source"] for e in store.environments()} == sources  # the pool and nothing else
        assert store.config["buffer"]["retire_after"] == 0 and store.config["buffer"]["min_fill"] == 2
    assert [s.round for s in fixed.summaries] == [0, 1]

    run(RunConfig(rounds=2, designer="mutation", pool={"path": str(tmp_path / "pool")}, **TINY), tmp_path / "seeded",
        console=quiet(), report=False)
    with RunStore.open(tmp_path / "seeded") as store:
        stored = {e["source"] for e in store.environments()}
        assert sources <= stored and len(stored) > len(sources)  # the pool first, then the designer's levels
        # The seed pool fits the buffer whole, beside as many designed levels as a run without seeds keeps.
        assert store.config["buffer"]["capacity"] == BufferConfig().capacity + 2
    by_hand = RunConfig(designer="mutation", pool={"path": str(tmp_path / "pool")}, buffer={"capacity": 5})
    assert by_hand.buffer.capacity == 5


def test_run_pool_on_the_command_line(tmp_path):
    pool = nested_pool(tmp_path, "boxed_strict")
    proc = spadegym("run", "--pool", str(pool), "--agent", "random", "--rounds", "1", "--out", str(tmp_path / "r"),
                    "--no-report", "--set", "envs_per_round=1", "--set", "plays=2", "--set", "hint_plays=2",
                    "--set", "group_size=2", "--set", "heldout.every=0", "--set", "heldout.levels=ends",
                    "--set", "heldout.seeds=1", "--set", 'heldout.families=["take_away"]', "--set", "tensorboard=false")
    assert proc.returncode == 0, proc.stderr
    with RunStore.open(tmp_path / "r") as store:
        assert store.config["designer"] == "pool" and store.config["pool"] == {"path": str(pool)}
        assert [e["source"] for e in store.environments()] == [(REFERENCE / "boxed_strict.py").read_text()]
    missing = spadegym_here("run", "--pool", str(tmp_path / "nope"), "--out", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_the_pool_section_names_a_bad_key_or_a_missing_path_in_one_sentence(tmp_path):
    from spadegym.errors import UserError
    from spadegym.loop import validate_config

    with pytest.raises(UserError, match=r"'pool\.paht' is not a known setting; did you mean 'pool\.path'\?"):
        validate_config({"pool": {"paht": str(tmp_path)}})
    with pytest.raises(UserError, match="the 'pool' designer plays the files of the pool: give the directory"):
        validate_config({"designer": "pool"})
    with pytest.raises(UserError, match="holds no environment|no such file") as err:
        validate_config({"designer": "pool", "pool": {"path": str(tmp_path / "nope")}})
    assert "\n" not in str(err.value)


def test_a_pool_before_a_designer_has_that_designer_s_abilities(tmp_path):
    from spadegym.designers.base import Abilities, abilities
    from spadegym.designers.pool import PoolDesigner
    from spadegym.designers.registry import make_designer

    files = [REFERENCE / "boxed_strict.py"]
    alone, seeded = PoolDesigner(files), PoolDesigner(files, then=make_designer("mutation"))
    assert abilities(alone) == Abilities() and abilities(seeded) == Abilities(learns=True)
    assert abilities(PoolDesigner(files, then=make_designer("uniform"))) == Abilities()
