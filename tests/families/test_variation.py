"""Structural variation and open-ended difficulty: every family's edit space, played in the real sandbox."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from spadegym.families import DIMENSIONS, FamilyError, edit_space, get_family, list_families
from spadegym.families.calibrate import play
from spadegym.families.variation import held_out_variation, in_training_slice
from spadegym.sandbox import Sandbox
from spadegym.validate import validate_source
from spadegym.validate.config import ValidationConfig


def _play(sandbox: Sandbox, source: str, seed: int = 3) -> tuple[str, list[str], str, list[str]]:
    """The first observation, menu and hint of one instance, and its solution."""
    handle = sandbox.open(source, "level.py")
    try:
        first = handle.reset(seed=seed, want=["valid_actions", "hint"]).value
        return first["observation"], first["valid_actions"], first["hint"], handle.call("solution").value
    finally:
        handle.close()


def test_every_family_is_sound_past_its_listed_levels_and_on_its_held_out_slice(sandbox: Sandbox) -> None:
    # Frontier levels (one and two steps past the hardest listed one) and the edge-case slice at the hardest
    # listed level, one seed each: benchmarks/family_soundness.py --levels extended|edge runs 64 seeds.
    cases = []
    for fam in list_families():
        cases += [(fam.name, fam.level_knobs(fam.max_level + k)) for k in (1, 2)]
        cases.append((fam.name, {**fam.level_knobs(fam.max_level), **held_out_variation()}))

    def verdict(case):
        name, knobs = case
        return validate_source(get_family(name).render(knobs), f"{name}.py", sandbox=sandbox,
                               config=ValidationConfig(seed=5))

    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(verdict, cases))
    bad = [f"{name} {knobs}: {v.feedback()}" for (name, knobs), v in zip(cases, verdicts) if not v.valid]
    assert not bad, "\n".join(bad)


def test_wording_layout_and_names_change_what_the_player_reads_not_the_game(sandbox: Sandbox) -> None:
    fam = get_family("key_rooms")
    listed = fam.level_knobs(1)
    varied = {**listed, "phrasing": 1, "verbs": 2, "layout": "equals", "line_order": "event_first", "menu": "sorted"}
    obs, menu, hint, solution = _play(sandbox, fam.render(listed))
    obs2, menu2, hint2, solution2 = _play(sandbox, fam.render(varied))
    assert obs.splitlines()[0] == "game: key and door" and "passages: room" in obs
    assert obs2.splitlines()[0] == "last result = start" and "doorways = hall" in obs2  # another wording and layout
    assert "pick up pass" in menu2 and menu2 == sorted(menu2) and "take key" not in menu2
    assert len(solution2) == len(solution) and solution2[-1] == "unbolt portal"  # the same game, renamed
    assert hint2.split(":")[0] in menu2  # the hint names a listed action in the level's own words
    assert play(sandbox, fam.render(varied), [1, 2, 3], "hint", parallel=3).win_rate == 1.0
    handle = sandbox.open(fam.render(varied), "level.py")
    try:  # the listed names stay aliases
        handle.reset(seed=3)
        assert "invalid" not in handle.step(solution[0]).value["observation"]
    finally:
        handle.close()


def test_a_start_after_random_moves_still_wins_and_differs_from_the_plain_start(sandbox: Sandbox) -> None:
    fam = get_family("button_lock")
    plain, moved = fam.level_knobs(1), {**fam.level_knobs(1), "start": 2}
    starts = [_play(sandbox, fam.render(k), seed)[0] for k in (plain, moved) for seed in (1, 2, 3)]
    assert starts[:3] != starts[3:]
    assert "unknown effect" in starts[0] and any(line.count("unknown") < starts[0].count("unknown")
                                                 for line in starts[3:])  # a button pressed before the start
    assert validate_source(fam.render(moved), "moved.py", sandbox=sandbox).valid


def test_every_menu_is_distinct_under_every_wording() -> None:
    for fam in list_families():
        for index in range(4):
            wording = fam.wording({"phrasing": index, "verbs": index})
            for level in (0, fam.max_level):
                knobs = fam.level_knobs(level)
                assert fam.check_knobs({**knobs, "verbs": index})  # renders
            said = [wording.get(word, word) for word in fam.verbs]
            assert len(set(said)) == len(said), (fam.name, index, said)


def test_the_edit_space_lists_knobs_with_their_extension_and_dimensions_with_held_out_choices() -> None:
    space = edit_space("grid_maze")
    assert space.knobs["size"].listed == [4, 4, 5, 6] and space.knobs["size"].extension == [7, 8, 9]
    assert space.level(space.max_level + 1)["size"] == 7 and space.level(0) == get_family("grid_maze").level_knobs(0)
    assert set(space.dimensions) == {d.name for d in DIMENSIONS}
    assert space.dimensions["layout"].held_out == ["bracket"] and "bracket" not in space.allowed("layout")
    assert "bracket" in space.allowed("layout", held_out=True)
    level = space.check({})
    steps = space.steps(level)
    assert {s.kind for s in steps} >= {"harder", "phrasing", "layout", "actions", "initial", "reward", "budget"}
    assert all(in_training_slice(space.apply(level, s)) for s in steps)
    harder = space.apply(space.level(space.max_level), {"size": 8})  # past the listed levels
    assert get_family("grid_maze").render(harder)
    difficulty, variation = space.split(harder)
    assert difficulty["size"] == 8 and set(variation) == set(space.dimensions)
    with pytest.raises(FamilyError, match="held out of training"):
        space.apply(level, {"layout": "bracket"})
    with pytest.raises(FamilyError, match="not one of its values"):
        space.apply(level, {"size": 99})
    assert space.model_dump()["knobs"]["size"]["extension"] == [7, 8, 9]  # plain data a designer prompt can show


def test_random_variations_are_training_choices_unless_held_out_ones_are_asked_for() -> None:
    space, rng = edit_space("job_schedule"), random.Random(0)
    draws = [space.random_variation(rng) for _ in range(200)]
    assert all(in_training_slice(d) for d in draws)
    assert {d["layout"] for d in draws} == {"colon", "equals", "pipe"}
    assert any(not in_training_slice(space.random_variation(rng, held_out=True)) for _ in range(50))
