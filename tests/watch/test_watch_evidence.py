"""What a level's evidence says: agency and noise from outcomes at fixed seeds, hint-only and hopeless levels
over rounds, cosmetic twins; each finding from hand-made plays."""

from __future__ import annotations

from spadegym.watch import LevelEvidence, Outcome


def plays(seed: int, outcomes: list[tuple[bool, bool]], distinct: bool = True) -> list[Outcome]:
    """``(hinted, success)`` plays of one instance; each with its own action sequence unless not ``distinct``."""
    return [Outcome("e", seed, hinted, success, (f"a{i}" if distinct else "a",)) for i, (hinted, success) in
            enumerate(outcomes)]


def level(*seeds: list[Outcome], history: list[list] = (), round_: int = 0) -> LevelEvidence:
    ev = LevelEvidence(designer="d", added=0)
    for outcomes in seeds:
        ev.record(outcomes, round_)
    ev.history = [list(h) for h in history]
    return ev


def test_an_outcome_the_seed_decides_whatever_is_played_has_no_agency_and_is_noise():
    coin = level(plays(1, [(False, True)] * 4 + [(True, True)] * 4), plays(2, [(False, False)] * 4 + [(True, False)] * 4))
    assert coin.within_share() == 0.0
    assert coin.findings() == ["no_agency", "noise"]


def test_an_outcome_the_play_decides_is_neither():
    game = level(plays(1, [(False, True), (False, False), (True, True), (True, True)]),
                 plays(2, [(False, False), (False, True), (True, True), (True, False)]))
    assert game.within_share() > 0.8
    assert game.findings() == []


def test_the_hint_arm_showing_that_actions_matter_clears_agency_but_not_noise():
    # Without the hint the seed decides (wins at seed 1, loses at seed 2); with it seed 2 is won too.
    lottery = level(plays(1, [(False, True)] * 4 + [(True, True)] * 4),
                    plays(2, [(False, False)] * 4 + [(True, True)] * 4))
    assert lottery.findings() == ["noise"]


def test_seeds_of_different_rounds_are_not_compared():
    # Lost in round 0, won in round 5: the agent learnt in between; that says nothing about the instances.
    learnt = level(plays(1, [(False, False)] * 4))
    learnt.record(plays(2, [(False, True)] * 4), 5)
    assert learnt.within_share() is None and learnt.findings() == []


def test_seeds_where_one_action_sequence_was_played_decide_nothing():
    # A deterministic player wins one instance and loses the other: that says nothing about agency.
    stubborn = level(plays(1, [(False, True)] * 4, distinct=False), plays(2, [(False, False)] * 4, distinct=False))
    assert stubborn.within_share() is None
    assert stubborn.assessed() == [] and stubborn.findings() == []


def test_hint_only_needs_two_rounds_where_only_the_hint_wins():
    first = level(history=[[0, 0.0, 1.0]])
    assert "hint_only" not in first.assessed()  # one round is a first look
    only_hint = level(history=[[0, 0.0, 1.0], [2, 0.0625, 0.875]])
    assert only_hint.findings() == ["hint_only"]
    learnt = level(history=[[0, 0.0, 1.0], [2, 0.3125, 0.875]])  # no-hint success rose: a frontier level
    assert learnt.findings() == []


def test_hopeless_is_a_level_nothing_wins_not_even_the_probes():
    dark = level(history=[[0, 0.0, 0.0], [1, 0.0, 0.0625]])
    assert dark.findings() == ["hopeless"]
    dark.probe_wins = 1
    assert dark.findings() == []


def test_a_behaviour_twin_whose_code_reads_as_new_is_cosmetic():
    ev = level()
    ev.twin, ev.twin_behaviour, ev.twin_code = "old", 0.95, 0.93
    assert ev.findings() == ["cosmetic"]
    ev.twin_code = 0.998  # the same code but for numbers: a variant, not a disguise
    assert ev.findings() == []


def test_evidence_round_trips_as_json():
    import json

    ev = level(plays(1, [(False, True), (True, False)]), history=[[0, 0.5, 0.5]])
    assert LevelEvidence.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev
