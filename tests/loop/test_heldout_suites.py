"""Held-out suites: what each holds, when each is measured, and what a run shows of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from spadegym.errors import UserError
from spadegym.families import difficulty_index, get_family, list_families
from spadegym.families.variation import DIMENSIONS, in_training_slice
from spadegym.loop import RunConfig, run
from spadegym.loop.config import validate_config
from spadegym.loop.heldout import BUILT_IN_SUITES, build_suites, due_suites, unseen_families
from spadegym.store import RunStore

# Four levels a round of two plays each arm: the suites, not the training, are what these runs are for.
TINY = {"envs_per_round": 4, "plays": 2, "hint_plays": 2, "group_size": 2}


def _knobs(source: str) -> dict:
    from spadegym.envfile import inspect_source

    return inspect_source(source).difficulty


def test_each_suite_holds_what_no_training_draw_holds() -> None:
    unseen = unseen_families("rotate", seed=1)
    assert len(unseen) == 6 and len({get_family(n).skill for n in unseen}) == 6  # one family per skill
    assert unseen != unseen_families("rotate", seed=2)  # rotated over seeds
    suites = {name: build_suites([name], unseen=unseen) for name in BUILT_IN_SUITES}
    training = {f.name for f in list_families()} - set(unseen)
    assert {h.family for h in suites["in_distribution"]} == training
    assert {h.family for h in suites["unseen_families"]} == set(unseen)
    for h in suites["frontier"]:  # one and two steps past the hardest listed level
        family = get_family(h.family)
        hardest_listed = difficulty_index(family.name, family.level_knobs(family.max_level))
        assert h.level in (family.max_level + 1, family.max_level + 2) and h.difficulty > hardest_listed
    for h in suites["edge_cases"]:  # every dimension with held-out choices takes one
        knobs = _knobs(h.spec.source)
        assert not in_training_slice(knobs)
        assert all(knobs[d.name] in d.held_out for d in DIMENSIONS if d.held_out)
    for name in ("in_distribution", "unseen_families"):
        assert all(in_training_slice(_knobs(h.spec.source)) for h in suites[name])
    ids = [h.env_id for suite in suites.values() for h in suite]
    assert len(ids) == len(set(ids))


def test_the_first_suite_is_measured_often_the_others_at_the_end_of_each_block() -> None:
    suites = ["in_distribution", "frontier", "edge_cases"]
    due = {n: due_suites(suites, n, rounds=36, every=4, suites_every=12) for n in range(36)}
    assert due[0] == due[4] == ["in_distribution"] and due[1] == []
    assert due[11] == due[23] == due[35] == suites
    assert due_suites(suites, 5, rounds=36, every=0, suites_every=0) == []


def test_suite_settings_are_checked_with_one_sentence() -> None:
    with pytest.raises(UserError, match="did you mean 'frontier'"):
        validate_config({"heldout": {"suites": ["fronteir"]}})
    with pytest.raises(UserError, match="set heldout.path"):
        validate_config({"heldout": {"suites": ["path"]}})
    with pytest.raises(UserError, match="did you mean 'grid_maze'"):
        validate_config({"heldout": {"unseen_families": ["grid_maz"]}})
    config = validate_config({"heldout": {"path": "x"}})
    assert config.heldout.suite_names() == ["path"]
    assert RunConfig().heldout.suite_names() == list(BUILT_IN_SUITES)


def test_a_run_trains_on_no_unseen_family_and_shows_every_suite(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    config = RunConfig(rounds=3, seed=4, **TINY, heldout={"every": 0, "suites_every": 0, "levels": "easiest",
                                                          "seeds": 1})
    with open(lines, "w") as out:
        result = run(config, tmp_path / "run", console=Console(file=out, width=400), report=True)
    unseen = set(config.training_exclusions())
    with RunStore.open(tmp_path / "run") as store:
        trained = {e["family"] for e in store.environments()}
        assert trained and not trained & unseen
        assert all(in_training_slice(e["knobs"]) for e in store.environments())
    last = result.summaries[-1].heldout
    assert list(last["heldout_by_suite"]) == list(BUILT_IN_SUITES)
    assert round(last["heldout_success"], 4) == last["heldout_by_suite"]["in_distribution"]
    text = lines.read_text()
    assert "(frontier " in text and " edge " in text and " unseen " in text
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "Held-out success by suite" in html and "held-out: edge cases" in html


def test_a_pool_run_is_measured_on_the_users_own_held_out_files(tmp_path: Path) -> None:
    # issue 29 item 15: with heldout.path, a --pool run's held-out figures are the user's tasks, not the built-ins.
    pool, held = tmp_path / "pool", tmp_path / "held"
    pool.mkdir()
    held.mkdir()
    for folder, names in ((pool, ("knapsack", "job_schedule")), (held, ("fuel_route",))):
        for name in names:
            family = get_family(name)
            (folder / f"{name}.py").write_text(family.render(family.level_knobs(0)))
    config = RunConfig(rounds=2, seed=0, designer="pool", pool={"path": str(pool)}, **TINY,
                       heldout={"path": str(held), "every": 0, "seeds": 2})
    result = run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    last = result.summaries[-1].heldout
    assert list(last["heldout_by_suite"]) == ["path"] and list(last["heldout_by_family"]) == ["fuel_route"]
    with RunStore.open(tmp_path / "run") as store:
        assert {e["env_id"] for e in store.episodes(split="heldout")} == {"heldout-path-fuel_route"}


def test_a_setting_whose_skills_have_one_family_each_still_holds_one_out() -> None:
    from spadegym.families import TOOL_SKILLS

    tool_families = {f.name for skill in TOOL_SKILLS for f in list_families(skill)}
    picked = {seed: unseen_families("rotate", seed=seed, skills=TOOL_SKILLS) for seed in range(3)}
    assert all(len(names) == 1 and set(names) <= tool_families for names in picked.values())
    assert len({names[0] for names in picked.values()}) == 3  # rotated over seeds
    suite = build_suites(["unseen_families"], unseen=picked[0])
    assert {h.family for h in suite} == set(picked[0])
    assert unseen_families("rotate", seed=0, skills=TOOL_SKILLS, keep=sorted(tool_families)[1:]) == []
