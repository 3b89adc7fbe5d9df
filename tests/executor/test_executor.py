"""The executor seam without Ray: the setting, and the local executor's order of verdicts."""

from __future__ import annotations

import sys

import pytest

from spadegym.errors import UserError
from spadegym.executor import LocalExecutor
from spadegym.level import Level
from spadegym.loop.config import load_config


def test_the_executor_setting_accepts_local_and_ray_and_names_a_wrong_one():
    assert load_config(sets=["executor=ray", "ray.address=auto", "ray.actors=3"]).ray.actors == 3
    assert load_config().executor == "local"
    with pytest.raises(UserError, match="'executor'"):
        load_config(sets=["executor=dask"])
    with pytest.raises(UserError, match="'ray.actor'.*did you mean 'ray.actors'"):
        load_config(sets=["ray.actor=2"])


def test_the_local_executor_returns_one_verdict_per_level_in_order(fixtures_dir):
    good = (fixtures_dir / "envs" / "key_door.py").read_text()
    with LocalExecutor() as executor:
        verdicts = executor.validate([Level("class Broken(:\n"), Level(good)], None, names=["broken.py", "key_door.py"])
        assert executor.counters() == {}
    assert [(v.file, v.valid) for v in verdicts] == [("broken.py", False), ("key_door.py", True)]


def test_the_ray_executor_without_ray_says_how_to_install_it(monkeypatch):
    from spadegym.executor import make_executor

    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    with pytest.raises(UserError, match=r"executor 'ray' needs the ray package; install it with: pip install -e \".*\[ray\]\""):
        make_executor("ray")


def test_checking_a_remote_level_without_openenv_says_how_to_install_it(monkeypatch):
    from spadegym.executor.openenv import wire_check
    from spadegym.level import Remote

    monkeypatch.setitem(sys.modules, "websockets.asyncio.client", None)  # as if openenv were not installed
    with pytest.raises(UserError, match=r"OpenEnv server at http://127.0.0.1:9 needs OpenEnv .*pip install -e \".*\[openenv\]\""):
        wire_check(Remote(url="http://127.0.0.1:9"))
