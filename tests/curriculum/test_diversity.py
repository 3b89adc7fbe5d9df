"""The diversity figures: Vendi score per level over a TF-IDF n-gram kernel."""

from __future__ import annotations

import pytest

from spadegym.curriculum.diversity import (
    COLLAPSE_THRESHOLD,
    PoolDiversity,
    collapsed,
    identity,
    ngrams,
    per_item,
    transcript_text,
)
from spadegym.families import get_family, list_families


def test_copies_count_as_one_level_and_unrelated_texts_as_all():
    text = ngrams("the quick brown fox jumps over the lazy dog")
    assert per_item([text] * 5) == pytest.approx(1 / 5, abs=1e-3)
    unrelated = [ngrams(t) for t in ("alpha beta gamma", "delta epsilon zeta", "eta theta iota")]
    assert per_item(unrelated) == pytest.approx(1.0, abs=1e-3)
    assert per_item([]) is None


def test_the_builtin_families_are_diverse_and_one_family_repeated_is_a_collapse():
    families = [ngrams(f.render(f.level_knobs(0))) for f in list_families()]
    assert per_item(families) > 0.5  # 18 games, though they share their episode machinery
    maze = get_family("grid_maze")
    same = [ngrams(maze.render({**maze.level_knobs(i % 4), "variant": i % 8})) for i in range(24)]
    score = per_item(same)
    assert score < COLLAPSE_THRESHOLD  # the paper's collapsed pool: the same maze game again and again
    assert collapsed(score, len(same)) and not collapsed(per_item(families), len(families))
    assert not collapsed(0.01, 3)  # a pool too small to call collapsed


def test_pool_diversity_scores_new_levels_and_the_pool_and_forgets_levels_that_left():
    fams = list_families()[:4]
    sources = {f"e{i}": fam.render(fam.level_knobs(0)) for i, fam in enumerate(fams)}
    pool = PoolDiversity(first_play=lambda env_id: "the store's first play of " + env_id)
    for i, fam in enumerate(fams[:3]):
        pool.add_play(f"e{i}", transcript_text([f"game: {fam.name}\nactions: a, b"], ["a"]))
    pool.add_play("e0", "a later play does not replace the first")
    summary = pool.summary({"e3": sources["e3"]}, sources)
    assert summary["new_code"] == summary["new_play"] == 1.0  # one level is one distinct level
    assert 0.5 < summary["pool_code"] <= 1.0 and 0.5 < summary["pool_play"] <= 1.0
    assert summary["collapsed"] is False
    assert pool.play["e3"] == ngrams("the store's first play of e3")  # not seen played here: read from the store
    pool.summary({}, {"e1": sources["e1"]})
    assert set(pool.code) == set(pool.play) == {"e1"}


def test_the_pool_kernel_finds_the_near_copy_and_reads_plays_it_has_not_seen_from_the_store():
    maze, sorter = get_family("grid_maze"), get_family("rule_sorter")
    sources = {"maze0": maze.render(maze.level_knobs(0)), "maze0b": maze.render({**maze.level_knobs(0), "variant": 1}),
               "sorter": sorter.render(sorter.level_knobs(0)), "unplayed": sorter.render(sorter.level_knobs(1))}
    plays = {"maze0b": "position: 1 1\n> go north"}
    pool = PoolDiversity(first_play=plays.get)
    pool.add_play("maze0", "position: 1 2\n> go north")
    pool.add_play("sorter", "item: red square\n> bin a")
    k = pool.kernel(sources)
    assert k.shape == (4, 4) and (k.diagonal() == 1.0).all()
    assert k[0, 1] > 0.5 > k[0, 2]  # one game's two instances are alike; two games are not
    assert pool.play["maze0b"] == ngrams(plays["maze0b"])  # read from the store
    assert "unplayed" not in pool.play and k[2, 3] > 0  # no play yet: compared by its code alone


def test_a_level_is_its_code_and_its_play_so_varied_renders_of_one_family_count_as_more_levels(sandbox):
    import random

    from spadegym.curriculum.diversity import identity
    from spadegym.families import edit_space

    maze, space, rng = get_family("grid_maze"), edit_space("grid_maze"), random.Random(0)
    knob_only = [{**maze.level_knobs(i % 4), "variant": i % 8} for i in range(12)]
    varied = [{**k, **space.random_variation(rng)} for k in knob_only]

    def first_observations(levels):
        out = []
        for knobs in levels:
            handle = sandbox.open(maze.render(knobs), "maze.py")
            try:
                out.append(ngrams(handle.reset(seed=1).value["observation"]))
            finally:
                handle.close()
        return out

    code_a, code_b = [ngrams(maze.render(k)) for k in knob_only], [ngrams(maze.render(k)) for k in varied]
    plain, shifted = identity(code_a, first_observations(knob_only)), identity(code_b, first_observations(varied))
    assert shifted > plain and shifted > per_item(code_b)  # what it plays sets a varied level apart
    copies = [ngrams("same game")] * 4
    assert identity(copies, copies) == pytest.approx(0.25, abs=1e-3)  # copies are one level


def test_the_kernel_is_that_of_a_vocabulary_read_item_by_item_to_the_last_bit():
    from collections import Counter

    import numpy as np

    from spadegym.curriculum.diversity import similarity

    def read_item_by_item(items: list[Counter]) -> np.ndarray:  # the kernel's definition, one n-gram at a time
        vocab: dict = {}
        for counts in items:
            for gram in counts:
                vocab.setdefault(gram, len(vocab))
        x = np.zeros((len(items), len(vocab)))
        for row, counts in enumerate(items):
            x[row, [vocab[g] for g in counts]] = np.log1p(list(counts.values()))
        x *= np.log((1 + len(items)) / (1 + (x > 0).sum(axis=0))) + 1.0
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
        k = x @ x.T
        np.fill_diagonal(k, 1.0)
        return k

    items = [ngrams(f.render(f.level_knobs(level))) for f in list_families()[:6] for level in (0, 1)]
    items += [ngrams(""), Counter({("alpha",): 2, ("beta",): 1})]  # an empty text, and plain counts (not cached)
    expected = read_item_by_item(items)
    assert np.array_equal(similarity(items), expected)
    assert np.array_equal(similarity(items), expected)  # again, from the arrays kept with each item
    assert np.array_equal(similarity(items[::-1]), read_item_by_item(items[::-1]))
    assert similarity([]).shape == (0, 0)


def test_a_summary_reading_each_kernel_once_gives_the_figures_of_each_computed_apart():
    fams = list_families()[:6]
    sources = {f"e{i}": fam.render(fam.level_knobs(i % 2)) for i, fam in enumerate(fams)}
    pool = PoolDiversity()
    for i, fam in enumerate(fams[:5]):  # e5 has no play: the code figures count it, the identity ones do not
        pool.add_play(f"e{i}", transcript_text([f"game: {fam.name}\nstep {i}"], ["a"]))
    new, kept = {k: sources[k] for k in ("e4", "e5")}, {k: sources[k] for k in ("e0", "e1", "e2", "e3", "e5")}
    summary = pool.summary(new, kept)
    code, play = pool.code, pool.play
    played = [i for i in kept if i in play]
    assert summary["pool"] == identity([code[i] for i in played], [play[i] for i in played])
    assert summary["pool_code"] == per_item([code[i] for i in kept]) and summary["new"] == identity([code["e4"]],
                                                                                                    [play["e4"]])
    assert summary["pool_play"] == per_item([play[i] for i in played]) and summary["new_code"] == per_item(
        [code["e4"], code["e5"]])
