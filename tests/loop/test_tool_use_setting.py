"""The tool-use setting end to end: one config key picks the tool-use skills, families and held-out suites, and
the default designer (mutation) and learner run on the tool-use families."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.errors import UserError
from spadegym.families import SKILLS, TOOL_SKILLS, get_family, list_families
from spadegym.loop import RunConfig, run
from spadegym.loop.config import tomllib, validate_config
from spadegym.store import RunStore

ROOT = Path(__file__).parents[2]
TOOL_FAMILIES = {"order_desk", "file_tree", "calendar", "bank_ledger", "inventory", "ticket_queue"}


def test_the_setting_picks_the_skills_and_the_games_stay_the_default():
    assert RunConfig().skills == list(SKILLS) and RunConfig().setting == "games"
    tools = RunConfig(setting="tool_use")
    assert tools.skills == list(TOOL_SKILLS)
    held_out = tools.training_exclusions()  # each tool-use skill has one family: one of the six is held out
    assert len(held_out) == 1 and set(held_out) <= TOOL_FAMILIES
    assert RunConfig(setting="tool_use", skills=["Data Retrieval"]).skills == ["Data Retrieval"]
    with pytest.raises(UserError, match="setting"):
        validate_config({"setting": "tools"})


def test_every_family_says_its_setting():
    done = subprocess.run(
        [sys.executable, "-m", "spadegym", "families", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    settings = {f["name"]: f["setting"] for f in json.loads(done.stdout)}
    assert {n for n, s in settings.items() if s == "tool_use"} == TOOL_FAMILIES
    assert set(settings.values()) == {"games", "tool_use"}
    assert {get_family(n).skill for n in TOOL_FAMILIES} == set(TOOL_SKILLS)


def test_the_example_config_runs_the_tool_use_setting(tmp_path: Path):
    settings = tomllib.loads((ROOT / "examples" / "configs" / "tool_use.toml").read_text())
    config = validate_config(
        {
            **settings,
            "rounds": 2,
            "envs_per_round": 4,
            "plays": 2,
            "hint_plays": 2,
            "group_size": 2,
            "heldout": {"every": 0, "levels": "easiest", "seeds": 1, "suites": ["in_distribution"]},
        }
    )
    assert (
        config.setting == "tool_use" and config.designer.text == "mutation" and config.agent.text == "learner"
    )
    result = run(config, tmp_path / "run")
    with RunStore.open(tmp_path / "run") as store:
        played = {e["family"] for e in store.environments(valid_only=True)}
    assert played and played <= TOOL_FAMILIES  # the mutation designer drew tool-use families only
    held = result.summaries[-1].heldout
    assert 0.0 <= held["heldout_success"] <= 1.0
    assert {f.name for f in list_families(setting="tool_use")} == TOOL_FAMILIES


def test_the_red_team_and_the_design_command_take_tool_use_families_and_skills():
    from spadegym.redteam.config import RedTeamConfig

    config = RedTeamConfig(target="random", families=["order_desk", "ticket_queue"])
    assert config.skills == ["Error Recovery", "Multi-Step Workflows"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spadegym",
            "design",
            "--skills",
            "data retrieval",
            "--count",
            "1",
            "--out",
            "/nonexistent-dir-for-a-refusal/x",
            "--designer",
            "nope",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert (
        "names no skill" not in said and "unknown designer 'nope'" in said
    )  # the skill was read, then refused


def test_a_baseline_designer_draws_only_the_run_s_setting():
    from spadegym.designers.registry import DESIGNERS

    for setting, wanted in (("games", False), ("tool_use", True)):
        config = RunConfig(setting=setting, designer="fixed:easy")
        designer = DESIGNERS.make(config.designer, config.seed, **DESIGNERS.from_config(config.designer, config))
        assert designer.pool and all((name in TOOL_FAMILIES) == wanted for name, _knobs in designer.pool)
        assert config.buffer.capacity == len(designer.pool)  # the buffer holds the setting's pool whole
