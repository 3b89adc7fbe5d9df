"""`spadegym doctor` lists each framework integration as available, or missing with why."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.adapters.integrations import INTEGRATIONS, Integration, broken_requirement, check, integrations

NAMES = {"gymnasium", "openenv", "verifiers", "trl", "ray", "reasoning-gym", "tensorboard", "wandb", "trackio"}
CHECKOUT = Path(__file__).resolve().parents[2]


def test_every_integration_is_listed_with_a_reason_exactly_when_missing() -> None:
    facts = integrations()
    assert set(facts) == NAMES
    for item in facts.values():
        assert isinstance(item["available"], bool)
        assert (item["why_missing"] is None) == item["available"]


def test_an_uninstalled_package_is_missing_with_the_command_that_installs_it_from_this_checkout(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """spadegym is installed from a checkout, so the hint installs the extra from it (no index has spadegym)."""
    monkeypatch.chdir(tmp_path)  # elsewhere: the checkout's path
    result = check(Integration("nothing", "no_such_module_x", "no-such-distribution-x", "nothing", "n/a"))
    assert result == {"available": False, "version": None, "what": "n/a",
                      "why_missing": f'not installed: pip install -e "{CHECKOUT}[nothing]"'}
    monkeypatch.chdir(CHECKOUT)  # where the README's commands run
    assert check(Integration("x", "no_such_module_x", "no-such-distribution-x", "openenv", "n/a"))["why_missing"] == (
        'not installed: pip install -e ".[openenv]"')


def test_a_dependency_at_a_version_it_excludes_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken tree (what an mcp 1/2 clash looks like) imports fine until it does not: doctor names it."""
    info = tmp_path / "brokenpkg-1.0.dist-info"
    info.mkdir()
    pytest_version = importlib.metadata.version("pytest")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenpkg\nVersion: 1.0\n"
                                   "Requires-Dist: pytest<1.0\n")
    (tmp_path / "brokenpkg.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert broken_requirement("brokenpkg") == f"brokenpkg needs pytest<1.0, but pytest {pytest_version} is installed"
    result = check(Integration("broken", "brokenpkg", "brokenpkg", "broken", "n/a"))
    assert not result["available"] and "pytest<1.0" in str(result["why_missing"])


def test_doctor_json_and_text_carry_the_integrations() -> None:
    done = subprocess.run([sys.executable, "-m", "spadegym", "doctor", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(facts["integrations"]) == NAMES
    text = subprocess.run([sys.executable, "-m", "spadegym", "doctor"], capture_output=True, text=True, timeout=120)
    assert "integrations:" in text.stdout
    for item in INTEGRATIONS:
        assert item.name in text.stdout.split("integrations:")[1]
