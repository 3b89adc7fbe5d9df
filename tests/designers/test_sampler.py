"""The non-adaptive baseline designers (uniform draws, fixed pools)."""

import asyncio

import pytest

from spadegym.designers import make_designer
from spadegym.designers.base import DesignContext
from spadegym.designers.sampler import SamplerDesigner, baseline_overrides
from spadegym.families import list_families
from spadegym.specs import Spec


def test_fixed_easy_proposes_every_family_once_at_level_zero():
    designer = make_designer("fixed:easy", seed=0)
    first = asyncio.run(designer.propose(DesignContext(skill="Optimization", count=10)))
    rest = asyncio.run(designer.propose(DesignContext(skill="Optimization", count=100)))
    proposed = first + rest
    assert len(proposed) == len(list_families())
    assert {c.family for c in proposed} == {f.name for f in list_families()}
    assert all(c.knobs == next(f for f in list_families() if f.name == c.family).level_knobs(0) for c in proposed)
    assert asyncio.run(designer.propose(DesignContext(skill="Optimization", count=5))) == []  # the pool is spent
    overrides = baseline_overrides(designer.parsed)
    assert overrides["min_fill"] == len(list_families()) and overrides["replay_fraction"] == 1.0
    assert overrides["retire_after"] == 0  # a fixed pool is replayed for the whole run


def test_uniform_draws_stay_in_the_skill_and_are_seeded():
    a = asyncio.run(SamplerDesigner(Spec("uniform"), seed=3).propose(DesignContext(skill="Spatial Reasoning", count=6)))
    b = asyncio.run(SamplerDesigner(Spec("uniform"), seed=3).propose(DesignContext(skill="Spatial Reasoning", count=6)))
    assert [c.knobs for c in a] == [c.knobs for c in b]
    assert {c.skill for c in a} == {"Spatial Reasoning"}
    assert len({c.candidate_id for c in a}) == 6
    assert baseline_overrides(Spec("uniform")) == {"replay_fraction": 0.0}


def test_state_round_trip_resumes_the_same_draws():
    designer = SamplerDesigner(Spec("uniform"), seed=1)
    asyncio.run(designer.propose(DesignContext(skill="Optimization", count=3)))
    state = designer.state_dict()
    later = asyncio.run(designer.propose(DesignContext(skill="Optimization", count=3)))
    restored = SamplerDesigner(Spec("uniform"), seed=99)
    restored.load_state_dict(state)
    assert [c.knobs for c in asyncio.run(restored.propose(DesignContext(skill="Optimization", count=3)))] == \
        [c.knobs for c in later]


def test_unknown_sampler_is_refused():
    with pytest.raises(ValueError, match="unknown sampler"):
        SamplerDesigner(Spec("fixed", "medium"))


def test_staged_climbs_one_level_per_equal_share_of_the_rounds():
    designer = make_designer("staged", seed=0, rounds=8)
    levels_by_round = []
    for n in range(8):
        proposed = asyncio.run(designer.propose(DesignContext(skill="Logical Deduction", count=6, round=n)))
        assert {c.skill for c in proposed} == {"Logical Deduction"}
        levels = set()
        for c in proposed:
            family = next(f for f in list_families() if f.name == c.family)
            named = [lv for lv in range(family.max_level + 1)
                     if family.level_knobs(lv) == {**c.knobs, "variant": family.level_knobs(lv)["variant"]}]
            assert len(named) == 1, c.knobs  # a named level, in some variant
            levels.add(named[0])
        levels_by_round.append(levels)
    top = max(f.max_level for f in list_families("Logical Deduction"))
    assert levels_by_round[0] == {0} and levels_by_round[-1] == {top}
    flat = [min(levels) for levels in levels_by_round]
    assert flat == sorted(flat)  # never back down
    assert baseline_overrides(designer.parsed) == {"replay_fraction": 0.0}  # fresh levels every round


def test_staged_without_a_run_length_says_what_it_needs():
    with pytest.raises(ValueError, match="rounds"):
        make_designer("staged")
