"""The compatibility page lists every convention the contract names, and every file it cites exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spadegym.adapters import LevelSourceError, open_levels
from spadegym.envfile.contract import REFERENCE_CONVENTIONS
from spadegym.errors import UserError
from spadegym.loop import RunConfig, run

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reference-compatibility.md"
FIXTURES = ROOT / "tests" / "fixtures" / "reference"


def test_the_page_lists_every_convention_and_cites_files_that_exist():
    text = PAGE.read_text()
    rows = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert set(REFERENCE_CONVENTIONS) <= rows, set(REFERENCE_CONVENTIONS) - rows
    for name in set(re.findall(r"`(\w+\.py)`", text)):
        found = list(FIXTURES.rglob(name)) + list((ROOT / "tests").rglob(name)) + list((ROOT / "spadegym").rglob(name))
        assert found, f"the page cites {name}, which no longer exists"


def test_the_reference_s_rlve_and_gem_sources_are_refused_in_one_sentence(tmp_path):
    for spec in ("rlve:Sudoku", "gem:game:GuessTheNumber-v0"):
        with pytest.raises(LevelSourceError, match="cannot import them; use reasoning-gym:TASK") as err:
            open_levels(spec)
        assert "\n" not in str(err.value) and "reference-compatibility.md" in str(err.value)
    with pytest.raises(UserError, match="sources: 'gem:math:Orz57K': GEM environments are objects"):
        run(RunConfig(rounds=1, sources=[{"source": "gem:math:Orz57K"}]), tmp_path / "run")
