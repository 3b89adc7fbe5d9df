"""The learner on its own: acting, one update, checkpoints, the bounded feature cache, advantages."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from spadegym.agents.base import View
from spadegym.agents.learner import (
    CheckpointError,
    Featurizer,
    Learner,
    LearnerConfig,
    group_advantages,
    make_learner,
)
from spadegym.agents.learner.features import Disguise
from spadegym.rollout.records import Episode, Turn

OBS = "Pick the colour of the sky.\nhint: the colour is blue"
ACTIONS = ["red", "blue", "green"]


def episode(action: str, ret: float, group: int = 0, seed: int = 1, hinted: bool = True, env: str = "sky") -> Episode:
    ep = Episode(env_id=env, seed=seed, hinted=hinted, group=group, terminated=True, ret=ret)
    ep.turns.append(Turn(OBS, action, action, ret, True, False, ACTIONS))
    return ep


def test_act_picks_valid_actions_and_reports_missing_ones():
    learner = make_learner(seed=1)
    views = [View(f"k{i}", OBS, valid_actions=ACTIONS) for i in range(20)] + [View("none", OBS, valid_actions=[])]
    replies = asyncio.run(learner.act(views))
    assert len(replies) == 21
    assert all(r.action in ACTIONS and r.text == r.action for r in replies[:20])
    assert replies[-1].action is None and "no valid actions" in (replies[-1].error or "")
    assert (learner.name, learner.keeps_history, learner.needs_valid_actions) == ("learner", False, True)


def test_update_raises_the_probability_of_winning_actions():
    learner = make_learner(seed=2, config={"hint_prior": 0})  # no innate hint-following: reward alone teaches
    before = learner.probabilities(OBS, ACTIONS)[1]
    for _ in range(10):
        stats = learner.update([episode("blue", 1.0), episode("red", 0.0), episode("green", 0.0), episode("red", 0.0)])
    after = learner.probabilities(OBS, ACTIONS)[1]
    assert stats["steps"] == 4 and stats["grad_norm"] > 0
    assert after > before + 0.3


def test_a_fresh_learner_follows_a_hint_that_writes_out_an_action(tmp_path):
    menu = ["read clue 1", "read clue 2", "suspect ada", "suspect bo", "accuse"]
    hinted = "suspects: ada, bo\nhint: the clues read so far leave more than one suspect: read clue 2"
    innate, blank = make_learner(seed=3, config={"hint_prior": 4}), make_learner(seed=3, config={"hint_prior": 0})
    assert innate.probabilities(hinted, menu)[1] > 0.8 and blank.probabilities(hinted, menu)[1] < 0.5
    # A paraphrase is followed by the words that set the action apart ("2" of "press 2").
    buttons = ["press 1", "press 2", "press 3"]
    assert innate.probabilities("hint: press button 2 next: it moves the display", buttons)[1] > 0.8
    # Without the hint line the rules have nothing to read: the two learners are the same.
    plain = "suspects: ada, bo"
    assert np.allclose(innate.probabilities(plain, menu), blank.probabilities(plain, menu))
    restored = Learner.load(innate.save(tmp_path / "ckpt"))
    assert np.allclose(restored.probabilities(hinted, menu), innate.probabilities(hinted, menu))


def test_update_without_signal_changes_only_entropy_terms():
    learner = make_learner(seed=2)
    stats = learner.update([episode("red", 0.0), episode("blue", 0.0)])
    assert stats["loss"] == pytest.approx(-learner.config.entropy_coef * stats["entropy"], rel=1e-5)


def test_group_advantages():
    eps = [episode("blue", 1.0), episode("red", 0.0), episode("red", 0.0), episode("red", 0.0),  # a group
           episode("red", 0.0, group=1), episode("red", 0.0, group=1),  # flat group: no signal
           episode("blue", 1.0, group=2, env="lone"), episode("red", 0.0, group=3, env="lone")]  # pooled
    failed = episode("blue", 1.0)
    failed.failure = "timeout"
    adv = group_advantages([*eps, failed])
    assert adv[0] > 0 > adv[1] == adv[2] == adv[3]
    assert sum(adv[:4]) == pytest.approx(0.0, abs=1e-9)
    assert adv[4] == adv[5] == 0.0
    assert adv[6] > 0 > adv[7]
    assert adv[8] == 0.0  # an infrastructure failure is never a loss
    # The two arms of one instance are separate groups: a hinted win does not lower an unhinted one.
    arms = group_advantages([episode("blue", 1.0, hinted=True), episode("blue", 1.0, hinted=True),
                             episode("blue", 1.0, hinted=False), episode("red", 0.0, hinted=False)])
    assert arms[0] == arms[1] == 0.0 and arms[2] > 0 > arms[3]


def test_checkpoint_round_trip_gives_identical_probabilities(tmp_path):
    learner = Learner(LearnerConfig(seed=4, hidden=16))
    for _ in range(3):
        learner.update([episode("blue", 1.0), episode("red", 0.0)])
    learner.save(tmp_path / "ckpt")
    loaded = make_learner(str(tmp_path / "ckpt"))
    assert loaded.config == learner.config
    for obs, actions in [(OBS, ACTIONS), ("light: red", ["press red", "press blue"]), ("", ["a"])]:
        assert np.array_equal(loaded.probabilities(obs, actions), learner.probabilities(obs, actions))
    # The sampling stream is saved too: the loaded learner continues exactly where the saved one was.
    views = [View(str(i), OBS, valid_actions=ACTIONS) for i in range(32)]
    assert [r.action for r in asyncio.run(loaded.act(views))] == [r.action for r in asyncio.run(learner.act(views))]
    # And training continues identically (optimizer state included).
    batch = [episode("green", 1.0), episode("red", 0.0)]
    learner.update(batch)
    loaded.update(batch)
    assert np.array_equal(loaded.probabilities(OBS, ACTIONS), learner.probabilities(OBS, ACTIONS))


def test_a_checkpoint_older_than_a_setting_keeps_the_behaviour_it_was_trained_with(tmp_path):
    learner = Learner(LearnerConfig(seed=4, verb_free=False, disguise=0.0))
    learner.update([episode("blue", 1.0), episode("red", 0.0)])
    path = learner.save(tmp_path / "ckpt")
    meta = json.loads((path / "learner.json").read_text())
    for setting in ("verb_free", "disguise"):
        del meta["config"][setting]  # as written before the setting existed
    (path / "learner.json").write_text(json.dumps(meta))
    loaded = make_learner(str(path))
    assert (loaded.config.verb_free, loaded.config.disguise) == (False, 0.0)
    views = [("job 1: deadline 9\njob 2: deadline 3", ["run job 1", "run job 2"]), (OBS, ACTIONS)]
    for obs, actions in views:
        assert np.array_equal(loaded.probabilities(obs, actions), learner.probabilities(obs, actions))


def test_loading_a_missing_checkpoint_is_one_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="is not a learner checkpoint.*for a run directory.*run_learner"):
        make_learner(str(tmp_path / "nothing"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "learner.json").write_text("{not json")
    (tmp_path / "bad" / "weights.npz").write_bytes(b"")
    with pytest.raises(CheckpointError, match="unreadable learner checkpoint"):
        make_learner(str(tmp_path / "bad"))


@pytest.mark.parametrize("layout", ["{} = {}", "{} | {}", "[{}] {}", "{} -> {}"])
def test_a_game_laid_out_another_way_has_the_same_features(layout):
    """A line's label is read whatever separator sets it apart: a layout is a convention, not a new game."""
    lines = [("game", "vault"), ("position", "1 2"), ("target", "3 2"), ("turns left", "5"), ("actions", "up, down")]
    colon = "\n".join(f"{label}: {value}" for label, value in lines) + "\nOpen the vault."
    other = "\n".join(layout.format(label, value) for label, value in lines) + "\nOpen the vault."
    a, b = Featurizer(bits=16).view(colon, ["up", "down"]), Featurizer(bits=16).view(other, ["up", "down"])
    for name in ("obs_idx", "obs_val", "pair_idx", "pair_val", "cross_idx", "cross_val"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    unlabelled = Featurizer(bits=16).view(colon.replace(": ", " "), ["up", "down"])
    assert not np.array_equal(unlabelled.obs_idx, a.obs_idx)  # the labels do matter: the check can fail


def test_feature_cache_is_bounded_and_eviction_changes_nothing():
    featurizer = Featurizer(bits=16, cache_entries=2_000)
    first = featurizer.view("position: 0 0\nkey: 1 1", ACTIONS)
    for i in range(500):
        featurizer.view(f"position: {i} {i + 1}\nkey: {i % 7} 3\nnote: step {i}", ACTIONS)
        assert featurizer.cached_entries <= 2_000
    assert featurizer.cached_entries > 0
    again = featurizer.view("position: 0 0\nkey: 1 1", ACTIONS)  # evicted long ago: rebuilt
    assert again is not first
    for name in ("obs_idx", "obs_val", "pair_idx", "pair_val", "pair_ptr", "cross_idx", "cross_val", "cross_ptr"):
        assert np.array_equal(getattr(again, name), getattr(first, name)), name


def test_the_featurizers_memos_are_bounded_and_change_no_feature():
    """Lines, label pairs and (line, action) overlaps are remembered to build views faster; a view built from
    warm memos, from memos forgotten midway, or by a fresh featurizer has the same features."""
    from spadegym.agents.learner.features.featurizer import Featurizer as Built

    menus = (["go up", "go down", "run job 1", "run job 2"], ["go up", "go down"])  # "go" sets apart, or not
    views = [(f"game: vault\nposition: {i % 5} {i % 3}\nkey: {i % 4} 2\nturns left: {20 - i % 20}\n"
              f"job {i % 3}: deadline {i % 6}\nhint: go {'up' if i % 2 else 'down'}", menus[i // 3 % 2])
             for i in range(60)]
    warm = Built(bits=16, cache_entries=0, verb_free=True)
    small = Built(bits=16, cache_entries=0, verb_free=True)
    small._overlaps.limit = 7
    small._lines.limit = 5
    for observation, actions in views * 2:
        expect = Built(bits=16, cache_entries=0, verb_free=True).view(observation, actions)
        for built in (warm.view(observation, actions), small.view(observation, actions)):
            for name in ("obs_idx", "obs_val", "pair_idx", "pair_val", "pair_ptr", "cross_idx", "cross_val", "cross_ptr"):
                assert np.array_equal(getattr(built, name), getattr(expect, name)), name
        assert len(small._overlaps.known) <= 7 and len(small._lines.relations) <= 6
    assert len(warm._overlaps.known) > 7  # the memo was used: the check above can fail


def test_python_mix_and_the_entry_count_match_numpy():
    from spadegym.agents.learner.features.hashing import mix, mix_int
    from spadegym.agents.learner.features.observation import _counted

    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, 500, dtype=np.uint64) >> rng.integers(0, 60, 500).astype(np.uint64)
    b = rng.integers(0, 2**63, 500, dtype=np.uint64) >> rng.integers(0, 60, 500).astype(np.uint64)
    for bits, kind in ((8, 0), (16, 13), (22, 25)):
        assert mix(kind, a, b, bits).tolist() == [mix_int(kind, int(x), int(y), bits) for x, y in zip(a, b)]
    x = rng.integers(0, 50, 300)
    for got, want in zip(_counted(x), np.unique(x, return_counts=True)):
        assert np.array_equal(got, want)


def test_overlap_features_mark_the_action_named_by_the_hint():
    featurizer = Featurizer(bits=16)
    with_hint = featurizer.view("Open the vault.\nhint: the code word is amber", ["say amber", "say dune"])
    without = featurizer.view("Open the vault.", ["say amber", "say dune"])
    amber = set(with_hint.pair_idx[with_hint.pair_ptr[0]:with_hint.pair_ptr[1]])
    dune = set(with_hint.pair_idx[with_hint.pair_ptr[1]:with_hint.pair_ptr[2]])
    plain = set(without.pair_idx[without.pair_ptr[0]:without.pair_ptr[1]])
    assert amber - dune - plain  # features that only the hinted action has


def test_relation_features_compare_numbers_across_labelled_lines():
    featurizer = Featurizer(bits=16)

    def cross(observation: str) -> set[int]:
        view = featurizer.view(observation, ["down"])
        return set(view.cross_idx.tolist())

    below_a = cross("position: 0 2\ntarget: 3 2")  # target row greater, same column
    below_b = cross("position: 1 0\ntarget: 2 0")  # other numbers, same relations
    above = cross("position: 3 2\ntarget: 0 2")
    shared = below_a & below_b
    assert shared, "the same comparison should give the same features whatever the numbers"
    assert shared - above, "the opposite comparison should not have them"


def pair_features(view, action: int) -> set[int]:
    return set(view.pair_idx[view.pair_ptr[action]:view.pair_ptr[action + 1]].tolist())


def test_reference_features_find_the_smallest_number_whatever_the_size():
    """"run job 2" refers to the "job 2:" line; its deadline is the smallest of the jobs the actions name."""
    featurizer = Featurizer(bits=16)
    small = featurizer.view("job 1: deadline 9\njob 2: deadline 3\njob 3: deadline 7\nactions: ...",
                            ["run job 1", "run job 2", "run job 3"])
    large = featurizer.view("job 1: deadline 12\njob 2: deadline 15\njob 3: deadline 20\njob 4: deadline 8\n"
                            "job 5: deadline 30\njob 6: deadline 1, finished",
                            ["run job 1", "run job 2", "run job 3", "run job 4", "run job 5"])
    earliest = pair_features(small, 1) & pair_features(large, 3)
    others = set().union(*(pair_features(small, j) for j in (0, 2)), *(pair_features(large, j) for j in (0, 1, 2)))
    assert earliest - others, "the earliest deadline should have a feature of its own, whatever the job count"
    # The finished job 6 is no action: its smaller deadline must not take the mark from job 4.
    assert pair_features(large, 3) - pair_features(large, 0) - pair_features(large, 4)


def test_mention_features_are_keyed_by_the_label_without_its_number():
    featurizer = Featurizer(bits=16)
    actions = ["suspect ada", "suspect bo", "suspect cy"]
    first = featurizer.view("suspects: ada, bo, cy\nclue 1: ada has an alibi", actions)
    third = featurizer.view("suspects: ada, bo, cy\nclue 3: bo has an alibi", actions)
    cleared = pair_features(first, 0) & pair_features(third, 1)  # named by a clue, whichever clue
    assert cleared - pair_features(first, 2) - pair_features(third, 2)


def test_later_passes_are_clipped_around_the_policy_that_played():
    config = LearnerConfig(seed=2, epochs=6, lr=0.05)
    learner = Learner(config)
    before = learner.probabilities(OBS, ACTIONS)[1]
    stats = learner.update([episode("blue", 1.0), episode("red", 0.0), episode("green", 0.0), episode("red", 0.0)])
    after = learner.probabilities(OBS, ACTIONS)[1]
    assert stats["clipped"] > 0  # some passes hit the trust region
    assert after > before
    single = Learner(LearnerConfig(seed=2, epochs=1, lr=0.05))
    single.update([episode("blue", 1.0), episode("red", 0.0), episode("green", 0.0), episode("red", 0.0)])
    assert after > single.probabilities(OBS, ACTIONS)[1]  # more passes, more learnt from one batch


@pytest.mark.parametrize("distill", [0.0, 1.0])
def test_won_hinted_episodes_teach_the_no_hint_policy_only_when_distilling(distill):
    plain = "Pick the colour of the sky."
    learner = Learner(LearnerConfig(seed=5, distill=distill))
    before = learner.probabilities(plain, ACTIONS)[1]
    # One hinted group where every play won: no advantage, so only distillation can teach.
    stats = learner.update([episode("blue", 1.0, group=g) for g in range(4)])
    after = learner.probabilities(plain, ACTIONS)[1]
    assert stats["distilled"] == (4 if distill else 0)
    if distill:
        assert after > before + 0.05
    else:
        assert abs(after - before) < 0.05


def test_a_long_observation_never_cuts_off_the_hint_line():
    featurizer = Featurizer(bits=16, max_tokens=32)
    long = "\n".join(f"note {i}: nothing to see here at all" for i in range(40))
    hinted = featurizer.view(long + "\nhint: say amber", ["say amber", "say dune"])
    amber = set(hinted.pair_idx[hinted.pair_ptr[0]:hinted.pair_ptr[1]])
    dune = set(hinted.pair_idx[hinted.pair_ptr[1]:hinted.pair_ptr[2]])
    assert amber - dune  # the overlap with the hint line is there despite the token budget


def test_distinct_overlap_ignores_words_that_every_action_shares():
    featurizer = Featurizer(bits=16)
    actions = ["say amber", "say dune"]
    hinted = featurizer.view("A vault.\nhint: the code word is amber", actions)
    said = featurizer.view("A vault.\nhint: you must say something", actions)
    amber = set(hinted.pair_idx[hinted.pair_ptr[0]:hinted.pair_ptr[1]])
    dune = set(hinted.pair_idx[hinted.pair_ptr[1]:hinted.pair_ptr[2]])
    say_amber = set(said.pair_idx[said.pair_ptr[0]:said.pair_ptr[1]])
    say_dune = set(said.pair_idx[said.pair_ptr[1]:said.pair_ptr[2]])
    distinct = (amber - dune) - say_amber  # what naming "amber" adds beyond naming "say"
    assert distinct
    plain = featurizer.view("A vault.", actions)
    own = set(plain.pair_idx[plain.pair_ptr[0]:plain.pair_ptr[1]]) - set(plain.pair_idx[plain.pair_ptr[1]:plain.pair_ptr[2]])
    assert say_amber - say_dune == own  # a hint naming only the shared word favours neither action


@pytest.mark.parametrize("top", [1 << 16, 1 << 22])
def test_row_order_by_16_bit_digits_is_the_stable_sort(top):
    from spadegym.agents.learner.model import stable_order

    rows = np.random.default_rng(3).integers(0, top, 50_000)
    rows[:100] = rows[100]  # runs of equal rows: their order must be kept
    assert np.array_equal(stable_order(rows), np.argsort(rows, kind="stable"))
    assert len(stable_order(rows[:0])) == 0


def test_a_view_several_decisions_read_is_scored_once_and_adds_up_their_gradients():
    import copy

    from spadegym.agents.learner.model import Scorer, make_batch

    featurizer, scorer = Featurizer(bits=12), Scorer(bits=12, hidden=8, seed=0)
    a, b = featurizer.view(OBS, ACTIONS), featurizer.view("Pick a number.", ["1", "2"])
    shared = make_batch([a, b, a, a])  # the same view object thrice: held once
    apart = make_batch([a, b, copy.copy(a), copy.copy(a)])  # equal views, distinct objects: held apart
    assert len(shared.sizes) == 2 and len(apart.sizes) == 4
    assert shared.decision_view.tolist() == [0, 1, 0, 0]
    assert shared.decision_pairs.tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2]
    one, four = scorer.forward(shared), scorer.forward(apart)
    assert np.allclose(one.probs[shared.decision_pairs], four.probs[apart.decision_pairs])
    d_decided = np.random.default_rng(0).standard_normal(len(shared.decision_pairs))
    summed = np.bincount(shared.decision_pairs, d_decided, minlength=len(one.scores)).astype(np.float32)
    g_one, g_four = scorer.gradients(one, summed), scorer.gradients(four, d_decided.astype(np.float32))
    for key in ("E", "u"):
        assert np.array_equal(g_one[key][0], g_four[key][0])
        assert np.allclose(g_one[key][1], g_four[key][1], atol=1e-5)
    assert np.allclose(g_one["w"], g_four["w"], atol=1e-5) and np.allclose(g_one["b"], g_four["b"], atol=1e-5)


def test_a_disguise_renames_each_word_one_way_and_keeps_numbers_and_the_hint_label():
    rename = Disguise(np.random.default_rng(0), share=1.0)
    observation = rename("Button 2: adds 5\nhint: press 2 twice")
    actions = [rename(a) for a in ["press 1", "press 2"]]
    assert observation.endswith("\nhint: " + " ".join(rename(w) for w in ["press", "2", "twice"]))
    assert actions[1] in observation  # the hint still writes the renamed action out
    assert [a.split()[1] for a in actions] == ["1", "2"] and actions[0].split()[0] == actions[1].split()[0] != "press"
    assert not {"button", "adds", "press", "twice"} & set(observation.split())
    assert Disguise(np.random.default_rng(0), share=0.0)("Button 2: adds 5") == "button 2: adds 5"


def test_disguised_copies_are_trained_beside_the_decisions_they_copy():
    batch = [episode("blue", 1.0), episode("red", 0.0), episode("green", 0.0), episode("red", 0.0)]
    plain = Learner(LearnerConfig(seed=3, disguise=0.0)).update(batch)
    disguised = Learner(LearnerConfig(seed=3, disguise=1.0)).update(batch)
    assert plain["disguised"] == 0 and disguised["disguised"] == plain["steps"] + plain["distilled"] == 5
    assert disguised["steps"] == plain["steps"] and disguised["distilled"] == plain["distilled"]


def test_verb_free_references_hold_for_the_game_with_its_actions_renamed():
    """"process ticket 2" is "run job 2" renamed: verb-free keys give both the same reference features."""
    lines = "job 1: deadline 9\njob 2: deadline 3\njob 3: deadline 6\nsoonest deadline: job 2"
    renamed_lines = lines.replace("job", "ticket")

    def marks(featurizer: Featurizer) -> set[int]:
        """What "run job 2" and "process ticket 2" share that their first sibling lacks."""
        listed = featurizer.view(lines, ["run job 1", "run job 2", "run job 3"])
        renamed = featurizer.view(renamed_lines, ["process ticket 1", "process ticket 2", "process ticket 3"])
        return (pair_features(listed, 1) & pair_features(renamed, 1)) - pair_features(listed, 0) - \
            pair_features(renamed, 0)

    plain, verb_free = marks(Featurizer(bits=16)), marks(Featurizer(bits=16, verb_free=True))
    assert plain < verb_free  # the same overlaps, and the references' marks besides (earliest deadline, mention)
    assert len(verb_free - plain) >= 2


def test_an_evaluated_episode_draws_the_same_actions_whatever_it_is_played_beside_or_after_a_restart():
    learner = make_learner(seed=3, config={"hint_prior": 0})
    observation = "Pick a colour."
    plays = [f"sky:{seed}:0" for seed in range(12)]

    def played(order: list[int], turns: int = 4, restart: int | None = None) -> dict[str, list[str]]:
        """Each play's actions over ``turns`` turns, the plays batched in ``order``; ``restart``: that play
        starts over at turn 2 (a replay after its worker was lost) and only the retry's actions count."""
        actions: dict[str, list[str]] = {plays[i]: [] for i in order}
        with learner.evaluating(seed=7):
            for turn in range(turns):
                views = [View(f"{k}:{plays[i]}", observation, valid_actions=ACTIONS, turn=turn, play=plays[i])
                         for k, i in enumerate(order)]
                if restart is not None and turn == 2:
                    actions[plays[restart]] = []
                    views[order.index(restart)].turn = 0
                for view, reply in zip(views, asyncio.run(learner.act(views))):
                    actions[view.play].append(reply.action)
            learner.end_episodes([f"{k}:{plays[i]}" for k, i in enumerate(order)])
        return actions

    alone = played(list(range(12)))
    assert len({tuple(a) for a in alone.values()}) > 1  # the plays do draw differently from each other
    shuffled = played([5, 11, 0, 3, 2, 9, 1, 4, 10, 6, 8, 7])
    assert shuffled == alone
    assert played([4, 2]) == {plays[4]: alone[plays[4]], plays[2]: alone[plays[2]]}
    retried = played(list(range(12)), turns=6, restart=4)
    assert retried[plays[4]] == played([4], turns=4)[plays[4]]
    training = learner.rng.bit_generator.state
    played([0, 1])
    assert learner.rng.bit_generator.state == training  # evaluation never draws from the training stream
