"""The quick start's install (`pip install -e .`, no extras) runs the quick start's commands.

The test environment has every extra installed, so a module the core path imports but only an extra brings (or one
that a dependency stopped bringing: `httpx`, once `openai` moved to `httpx2`) would pass every other test and crash a
new user's first `spadegym run`. Here each command runs in a Python where only the standard library, spadegym and the
distributions its core requirements pull in (followed transitively, extras and markers evaluated) can be imported.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

try:  # the closure starts from the installed distribution's requirements
    importlib.metadata.distribution("spadegym")
except importlib.metadata.PackageNotFoundError:
    pytest.skip("spadegym is not installed (pip install -e .)", allow_module_level=True)

#: Run first in the child: a finder that refuses any top-level module the core install does not have.
GUARD = r'''
import importlib.abc, importlib.metadata as md, sys
from packaging.requirements import Requirement

def closure():
    seen, todo = set(), [("spadegym", ())]
    while todo:
        name, extras = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            env = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in env):
                todo.append((req.name, tuple(req.extras)))
    return seen

core = closure()
allowed = {"spadegym", "spadegym_verifiers", "__main__"} | set(sys.stdlib_module_names)
for module, dists in md.packages_distributions().items():
    if any(d.lower().replace("_", "-") in core for d in dists):
        allowed.add(module)

class CoreOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in allowed or top.startswith("_"):
            return None
        raise ModuleNotFoundError(f"No module named {top!r} (not in the core install)", name=top)

sys.meta_path.insert(0, CoreOnly())
'''


def spadegym_core(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    code = GUARD + f"sys.argv = ['spadegym', *{list(args)!r}]\nfrom spadegym.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_the_guard_refuses_what_only_an_extra_brings(tmp_path: Path) -> None:
    code = GUARD + "import numpy, openai\ntry:\n    import torch\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "not in the core install" in proc.stdout


def test_the_quick_start_commands_run_on_the_core_install(tmp_path: Path) -> None:
    run = spadegym_core("run", "--rounds", "1", "--out", str(tmp_path / "run"), "--set", "envs_per_round=4",
                        "--set", "plays=4", "--set", "hint_plays=4", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr and (tmp_path / "run" / "report.html").exists()
    for args in (["families"], ["new", "grid_maze", "--level", "2", "-o", "maze.py"], ["validate", "maze.py"],
                 ["doctor"], ["report", str(tmp_path / "run")], ["run", "--print-config", "--describe"]):
        proc = spadegym_core(*args, cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])
