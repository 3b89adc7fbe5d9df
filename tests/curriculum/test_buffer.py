"""The PLR level buffer: duplicates, eviction, replay distribution, plain-data state."""

import json

import numpy as np
import pytest

from spadegym.curriculum import BufferConfig, BufferState, LevelBuffer, LevelRecord


def level(i, score=0.0, skill="s"):
    return LevelRecord(env_id=f"e{i}", skill=skill, code_hash=f"h{i}", added_round=0, score=score)


def test_duplicates_are_refused():
    buf = LevelBuffer()
    assert buf.add(level(1))
    assert not buf.add(LevelRecord(env_id="other", skill="s", code_hash="h1", added_round=1))
    assert buf.duplicate_of("h1") == "e1" and len(buf) == 1


def test_capacity_evicts_the_lowest_score():
    buf = LevelBuffer(BufferConfig(capacity=3))
    for i, score in enumerate([0.5, 0.1, 0.9, 0.7]):
        buf.add(level(i, score))
    assert sorted(buf.state.levels) == ["e0", "e2", "e3"]
    assert buf.duplicate_of("h1") is None  # its hash is forgotten with it


def test_a_level_not_yet_played_is_never_evicted_before_a_played_one():
    buf = LevelBuffer(BufferConfig(capacity=2))
    for i, score in enumerate([0.5, 0.9]):
        buf.add(level(i, score))
        buf.record_play(f"e{i}", 0, score, 0.5, 1.0, 0.5)
    buf.add(level(2))  # this round's new level: score 0 until it is played, so it must not be the one to go
    assert sorted(buf.state.levels) == ["e1", "e2"]


def twins_buffer(capacity, evict):
    """Two near-copies (a0, a1) and two distinct levels; a0 scores lowest, a1 is the better twin."""
    alike = {("a0", "a1"): 0.95, ("a0", "b"): 0.2, ("a1", "b"): 0.2, ("a0", "c"): 0.1, ("a1", "c"): 0.1, ("b", "c"): 0.3}

    def similarity(ids):
        return np.array([[1.0 if x == y else alike.get((x, y), alike.get((y, x))) for y in ids] for x in ids])

    buf = LevelBuffer(BufferConfig(capacity=capacity, evict=evict), similarity=similarity)
    for env_id, score in [("a0", 0.5), ("a1", 0.6), ("b", 0.1), ("c", 0.2)]:
        buf.add(LevelRecord(env_id=env_id, skill="s", code_hash=env_id, added_round=0))
        buf.record_play(env_id, 0, score, 0.5, 1.0, 0.5)
    return buf


def test_redundant_eviction_drops_the_weaker_of_the_two_most_alike_levels():
    buf = twins_buffer(capacity=4, evict="redundant")
    buf.config.capacity = 3
    buf.trim()
    assert sorted(buf.state.levels) == ["a1", "b", "c"]  # by score alone b (0.1) would have gone
    by_score = twins_buffer(capacity=4, evict="score")
    by_score.config.capacity = 3
    by_score.trim()
    assert sorted(by_score.state.levels) == ["a0", "a1", "c"]
    buf.config.capacity = 1  # once no twins are left, the least alike still go, the weaker of each pair
    buf.trim()
    assert list(buf.state.levels) == ["a1"]


def test_replay_waits_for_min_fill():
    buf = LevelBuffer(BufferConfig(min_fill=3, replay_fraction=0.5))
    buf.add(level(1))
    assert buf.replay_count(16) == 0
    buf.add(level(2))
    buf.add(level(3))
    assert buf.replay_count(16) == 3  # never more than stored


def test_rank_prioritisation_prefers_high_scores_and_staleness_rises():
    buf = LevelBuffer(BufferConfig(temperature=0.5, staleness_coef=0.0))
    for i, score in enumerate([0.1, 0.9, 0.5]):
        buf.add(level(i, score))
    ids, p = buf.replay_probabilities(current_round=5)
    by_id = dict(zip(ids, p))
    assert by_id["e1"] > by_id["e2"] > by_id["e0"]
    assert np.isclose(p.sum(), 1.0)
    stale = LevelBuffer(BufferConfig(staleness_coef=1.0))
    for i in range(3):
        stale.add(level(i))
    stale.record_play("e0", 4, 0.0, 0.5, 0.5, 0.0)
    ids, p = stale.replay_probabilities(current_round=5)
    assert dict(zip(ids, p))["e0"] < dict(zip(ids, p))["e1"]


def test_sampling_is_seeded_and_distinct():
    buf = LevelBuffer()
    for i in range(10):
        buf.add(level(i, i / 10))
    a = buf.sample_replay(4, 3, np.random.default_rng(1))
    b = buf.sample_replay(4, 3, np.random.default_rng(1))
    assert a == b and len(set(a)) == 4


def test_state_round_trips_through_json():
    buf = LevelBuffer()
    buf.add(level(1, 0.3))
    buf.record_play("e1", 2, 0.4, 0.5, 0.7, 0.2)
    restored = BufferState.from_dict(json.loads(json.dumps(buf.state.to_dict())))
    assert restored.levels["e1"].history == [[2, 0.5, 0.7, 0.4, 0.2]] and restored.hashes == {"h1": "e1"}
    assert restored.plays == {"family": {"s": 1}, "skill": {"s": 1}}
    assert BufferState.from_dict({"levels": {}, "hashes": {}}).plays == {"family": {}, "skill": {}}  # older runs


def test_balanced_replay_gives_every_family_equal_mass_and_ranks_within_it():
    buf = LevelBuffer(BufferConfig(staleness_coef=0.0, temperature=0.5))
    for i in range(6):  # a family whose levels all score high, and many of them
        buf.add(LevelRecord(env_id=f"a{i}", skill="s", code_hash=f"ha{i}", added_round=0, score=0.9 - i * 0.01,
                            family="alpha"))
    for i, score in enumerate([0.1, 0.3]):  # a family with two low-scoring levels
        buf.add(LevelRecord(env_id=f"b{i}", skill="s", code_hash=f"hb{i}", added_round=0, score=score,
                            family="beta"))
    ids, p = buf.replay_probabilities(current_round=1)
    mass = dict(zip(ids, p))
    assert np.isclose(sum(v for k, v in mass.items() if k.startswith("a")), 0.5)
    assert np.isclose(mass["b0"] + mass["b1"], 0.5) and mass["b1"] > mass["b0"]
    plain = LevelBuffer(BufferConfig(staleness_coef=0.0, temperature=0.5, balance="none"), buf.state)
    ids, p = plain.replay_probabilities(current_round=1)
    assert sum(v for k, v in zip(ids, p) if k.startswith("b")) < 0.05  # one ranking: beta starves


def family_level(family, i, score):
    return LevelRecord(env_id=f"{family}{i}", skill="s", code_hash=f"h{family}{i}", added_round=0, score=score,
                       family=family)


def test_balanced_replay_goes_to_the_least_played_family_first():
    buf = LevelBuffer(BufferConfig(staleness_coef=0.0))
    for i in range(4):
        buf.add(family_level("alpha", i, 0.9))
    buf.add(family_level("beta", 0, 0.1))
    buf.add(family_level("beta", 1, 0.2))
    for round_ in range(3):  # alpha has been played 6 times, beta never
        buf.record_play("alpha0", round_, 0.9, 0.5, 0.9, 0.4)
        buf.record_play("alpha1", round_, 0.9, 0.5, 0.9, 0.4)
    rng = np.random.default_rng(0)
    assert set(buf.sample_replay(2, 3, rng)) == {"beta0", "beta1"}  # the late family catches up
    picks = buf.sample_replay(3, 3, rng)
    assert set(picks[:2]) == {"beta0", "beta1"} and picks[2].startswith("alpha")  # beta has no third level
    # This round's new levels count: seven new beta levels put beta ahead of alpha.
    assert buf.sample_replay(1, 3, rng, fresh=[("beta", "s")] * 7)[0].startswith("alpha")
    buf.remove("alpha0")
    buf.remove("alpha1")
    assert buf.state.plays["family"]["alpha"] == 6  # counts outlive evicted levels


def test_a_level_is_judged_by_its_last_plays():
    buf = LevelBuffer(BufferConfig(window=3))
    buf.add(level(1))
    for round_, (win, score) in enumerate([(0.0, 0.2), (1.0, 0.8), (0.5, 0.5), (0.0, 0.2)]):
        buf.record_play("e1", round_, score, win, 1.0, 1.0 - win)
    r = buf.state.levels["e1"]
    assert np.isclose(r.win_rate, 0.5) and np.isclose(r.score, 0.5) and np.isclose(r.regret, 0.5)  # last three
    assert r.history[-1] == [3, 0.0, 1.0, 0.2, 1.0]  # the history keeps each play as it was
    latest = LevelBuffer(BufferConfig(window=1), buf.state)
    latest.record_play("e1", 4, 0.9, 0.75, 1.0, 0.25)
    assert (r.win_rate, r.score) == (0.75, 0.9)


def test_a_level_that_had_its_plays_leaves_replay_until_nothing_else_is_left():
    buf = LevelBuffer(BufferConfig(retire_after=2, staleness_coef=0.0))
    for i in range(3):
        buf.add(family_level("alpha", i, 0.9 - i * 0.1))
    for round_ in range(2):
        buf.record_play("alpha0", round_, 0.9, 0.5, 0.9, 0.4)  # the best-scored level, played twice
    assert buf.retired(buf.state.levels["alpha0"]) and not buf.retired(buf.state.levels["alpha1"])
    assert buf.stats()["retired"] == 1
    ids, _ = buf.replay_probabilities(current_round=2)
    assert "alpha0" not in ids
    rng = np.random.default_rng(0)
    assert set(buf.sample_replay(2, 2, rng)) == {"alpha1", "alpha2"}
    assert sorted(buf.sample_replay(3, 2, rng)) == ["alpha0", "alpha1", "alpha2"]  # the round stays full
    never = LevelBuffer(BufferConfig(retire_after=0), buf.state)
    assert not never.retired(buf.state.levels["alpha0"])


def test_learning_progress_scores_a_level_the_agent_now_wins_more_often_than_before():
    from spadegym.curriculum import learning_progress

    assert learning_progress([1.0, 1.0, 0.0, 1.0], value=0.25) == pytest.approx(0.5625)  # wins above the old rate
    assert learning_progress([1.0] * 4, value=1.0) == 0.0  # mastered: nothing left to learn
    assert learning_progress([0.0] * 4, value=0.3) == 0.0  # still never won
    assert learning_progress([], value=0.5) == 0.0
