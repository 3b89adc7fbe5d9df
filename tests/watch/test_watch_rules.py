"""When a designer is flagged, and what its levels then earn."""

from __future__ import annotations

from spadegym.watch import LevelEvidence
from spadegym.watch.rules import designer_counts, flagged_kinds, price, priced


def hint_only(designer: str, added: int) -> LevelEvidence:
    return LevelEvidence(designer, added, history=[[added, 0.0, 1.0], [added + 1, 0.0, 0.9]])


def frontier(designer: str, added: int) -> LevelEvidence:
    return LevelEvidence(designer, added, history=[[added, 0.1, 0.9], [added + 1, 0.4, 0.9]])


def test_a_designer_is_flagged_for_a_finding_its_levels_show_again_and_again():
    levels = [hint_only("gamer", 0) for _ in range(3)] + [frontier("honest", 0) for _ in range(20)]
    levels.append(hint_only("honest", 0))  # an honest curriculum has such a level now and then
    counts = designer_counts(levels, round_=2, window=8)
    assert counts["gamer"]["hint_only"] == [3, 3]
    assert flagged_kinds(counts["gamer"], min_levels=3, min_share=0.25) == ["hint_only"]
    assert counts["honest"]["hint_only"] == [1, 21]
    assert flagged_kinds(counts["honest"], min_levels=3, min_share=0.25) == []


def test_a_finding_a_small_share_of_the_levels_shows_is_not_flagged():
    levels = [hint_only("d", 0) for _ in range(3)] + [frontier("d", 0) for _ in range(10)]
    counts = designer_counts(levels, round_=2, window=8)["d"]
    assert flagged_kinds(counts, min_levels=3, min_share=0.25) == []  # 3 of 13
    assert flagged_kinds(counts, min_levels=3, min_share=0.2) == ["hint_only"]


def test_only_levels_of_the_window_count():
    levels = [hint_only("d", 0) for _ in range(3)]
    assert designer_counts(levels, round_=9, window=8) == {}
    assert designer_counts(levels, round_=7, window=8)["d"]["hint_only"] == [3, 3]


def test_a_level_keeps_its_reward_until_its_designer_is_flagged_for_what_it_shows():
    assert price(hint_only("d", 0), flagged=()) == 1.0  # an honest run that is never flagged is never priced
    assert price(hint_only("d", 0), flagged=["hint_only"]) == 0.0
    assert price(hint_only("d", 0), flagged=["no_agency"]) == 1.0
    assert price(frontier("d", 0), flagged=["hint_only"]) == 1.0


def test_a_flagged_designer_pays_for_the_profile_of_its_flag_from_the_first_round():
    new = LevelEvidence("d", 5, history=[[5, 0.0, 1.0]])  # one round: not a finding yet
    assert price(new, flagged=()) == 1.0
    assert price(new, flagged=["hint_only"]) == 0.0
    assert price(new, flagged=["hopeless"]) == 1.0  # the hint wins: not the hopeless profile


def test_pricing_takes_positive_reward_only():
    assert priced(0.6, 0.0) == 0.0
    assert priced(-0.3, 0.0) == -0.3  # a negative reward is never raised
    assert priced(0.6, 1.0) == 0.6
