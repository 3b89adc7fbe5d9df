"""The family registry: inputs checked, near names suggested, levels explicit, rendering deterministic."""

from __future__ import annotations

import pytest

from spadegym.envfile import inspect_source
from spadegym.families import SKILLS, FamilyError, get_family, list_families, new_environment


def test_at_least_three_families_per_skill() -> None:
    fams = list_families()
    assert len(fams) >= 18
    for skill in SKILLS:
        assert len(list_families(skill)) >= 3, skill
    assert len({f.name for f in fams}) == len(fams)


def test_unknown_family_suggests_near_names() -> None:
    with pytest.raises(FamilyError, match="did you mean 'grid_maze'"):
        get_family("grid_mase")
    with pytest.raises(FamilyError, match="spadegym families"):
        get_family("zzzzzz")


def test_knob_errors_name_the_knob_and_its_levels() -> None:
    fam = get_family("button_lock")
    with pytest.raises(FamilyError, match="no knob 'buton'; did you mean 'buttons'"):
        fam.render({"buton": 3})
    with pytest.raises(FamilyError, match="cannot be 99; levels: 4, 5, 5"):
        fam.render({"buttons": 99})
    with pytest.raises(FamilyError, match="level must be >= 0"):
        fam.level_knobs(-1)


def test_level_knobs_clip_and_order() -> None:
    for fam in list_families():
        easiest, hardest = fam.level_knobs(0), fam.level_knobs(fam.max_level)
        farthest = fam.level_knobs(fam.max_extended_level)
        assert fam.level_knobs(fam.max_extended_level + 5) == farthest != hardest  # past the extension: clipped
        assert easiest["reward_shaping"] == "partial" and hardest["reward_shaping"] == "sparse"
        assert easiest["variant"] == hardest["variant"] == 0  # free knob: not a difficulty
        assert easiest != hardest
        assert all(len(levels) >= 2 for levels in fam.knobs.values())
        # Each step past the hardest listed level raises a knob, and no knob goes back down.
        for level in range(fam.max_level, fam.max_extended_level):
            lower, upper = fam.level_index(fam.level_knobs(level)), fam.level_index(fam.level_knobs(level + 1))
            assert all(upper[k] >= lower[k] for k in fam.ladders) and upper != lower


def test_render_is_deterministic_and_carries_metadata() -> None:
    for fam in list_families():
        knobs = fam.level_knobs(1)
        source = fam.render(knobs)
        assert source == fam.render(dict(knobs))
        info = inspect_source(source)
        assert info.class_name.endswith("Env") and info.skill == fam.skill
        assert info.difficulty == knobs
        assert {"reset", "step", "valid_actions", "hint", "solution"} <= info.methods
        assert info.has_solution and info.has_valid_actions
        assert "import spadegym" not in source and "from spadegym" not in source and "from ." not in source


def test_new_environment_levels_and_overrides() -> None:
    fam, knobs, source = new_environment("knapsack", "max", {"items": "5"}, seed=3)
    assert knobs["items"] == 5 and knobs["target_pct"] == fam.knobs["target_pct"][-1]
    assert knobs["variant"] == 3 and f"DIFFICULTY = {knobs!r}" in source
    with pytest.raises(FamilyError, match="levels 0 to"):
        new_environment("knapsack", 9)
    with pytest.raises(FamilyError, match="'max'"):
        new_environment("knapsack", "hardest")
    with pytest.raises(FamilyError, match="no knob"):
        new_environment("knapsack", 0, {"itemz": "5"})
