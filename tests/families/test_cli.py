"""`spadegym families` and `spadegym new` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spadegym.envfile import inspect_source
from spadegym.families import get_family


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True, timeout=60)


def test_families_json_lists_every_family_with_levels_and_knobs() -> None:
    done = _cli("families", "--json")
    assert done.returncode == 0, done.stderr
    fams = json.loads(done.stdout)
    assert len(fams) >= 18
    maze = next(f for f in fams if f["name"] == "grid_maze")
    assert maze["skill"] == "Spatial Reasoning" and maze["levels"] == 4
    assert maze["knobs"]["size"] == [4, 4, 5, 6] and "reward_shaping" in maze["knobs"]


def test_new_writes_the_hardest_level_with_overrides(tmp_path: Path) -> None:
    out = tmp_path / "envs" / "lock.py"
    done = _cli("new", "button_lock", "--level", "max", "--set", "reward_shaping=partial", "--seed", "2",
                "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout and "spadegym validate" in done.stdout
    info = inspect_source(out.read_text())
    assert info.difficulty == {**get_family("button_lock").level_knobs(0), "buttons": 5, "depth": 5, "turns": 7,
                               "reward_shaping": "partial", "variant": 2}
    assert info.skill == "Mathematical Reasoning"


def test_new_user_errors_are_one_sentence(tmp_path: Path) -> None:
    out = str(tmp_path / "x.py")
    for args, expected in [
        (("new", "grid_mase", "-o", out), "did you mean 'grid_maze'"),
        (("new", "grid_maze", "--set", "siz=3", "-o", out), "did you mean 'size'"),
        (("new", "grid_maze", "--set", "size=10", "-o", out), "levels: 4, 4, 5, 6, 7, 8, 9"),
        (("new", "grid_maze", "--set", "size", "-o", out), "knob=value"),
        (("new", "grid_maze", "--level", "7", "-o", out), "levels 0 to 3 and extends to 6"),
    ]:
        done = _cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert expected in done.stderr and "Traceback" not in done.stderr
    assert not Path(out).exists()


def test_a_path_longer_than_a_line_prints_whole_to_a_pipe(tmp_path: Path) -> None:
    # A pipe has no width: the CLI never breaks a line itself, so a printed path stays copyable and greppable.
    deep = tmp_path / ("a-folder-name-long-enough-to-pass-any-terminal-width-" * 2) / "pool"
    files = [deep / "first_lock.py", deep / "second_lock.py"]
    for out in files:
        made = _cli("new", "button_lock", "-o", str(out))
        assert made.returncode == 0, made.stderr
        assert f"wrote {out} " in made.stdout and f"spadegym validate {out}\n" in made.stdout
    played = _cli("play", str(deep), "--agent", "random", "--episodes", "1")
    assert played.returncode == 0, played.stderr
    assert all(f"{out}\n" in played.stdout for out in files), played.stdout
