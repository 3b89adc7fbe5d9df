"""Training through the real sandbox: it learns, it uses hints, and a seeded run is reproducible."""

from __future__ import annotations

import numpy as np

from spadegym.agents.learner import Learner, LearnerConfig, evaluate, train


def test_success_rises_well_above_random(trained):
    _, curve = trained
    before, after = curve[0]["envs"]["lights"], curve[-1]["envs"]["lights"]
    # Random play wins lights 1 time in 64; the learnt policy should win most instances.
    assert before["success"] < 0.15
    assert after["success"] >= 0.6
    assert after["success"] - before["success"] >= 0.45


def test_learns_to_use_the_hint(trained):
    _, curve = trained
    arithmetic = curve[-1]["envs"]["arithmetic"]
    # Six options and no way to add: only the hint line names the answer.
    assert arithmetic["success_hint"] >= 0.7
    assert arithmetic["success_hint"] - arithmetic["success"] >= 0.4


def test_hint_following_transfers_to_an_unseen_environment(trained, sandbox, specs):
    learner, _ = trained
    result = evaluate(learner, sandbox, specs("vault"), seeds=48, seed=11)["vault"]
    # vault was never played: its hint words ("the code word is birch") are new, the hint label is not.
    assert result["success_hint"] - result["success"] >= 0.3


def test_curve_shape(trained):
    _, curve = trained
    assert [p["episodes"] for p in curve] == [0, 3072]
    for point in curve:
        assert set(point) == {"episodes", "seconds", "envs"}
        assert set(point["envs"]) == {"lights", "arithmetic"}
        for result in point["envs"].values():
            assert set(result) == {"success", "success_hint", "return", "return_hint"}
            assert all(0.0 <= v <= 1.0 for v in result.values())
    assert curve[-1]["seconds"] > curve[0]["seconds"] == 0.0


def test_same_seed_same_curve_and_weights(sandbox, specs):
    def run() -> tuple[list[dict], Learner]:
        learner = Learner(LearnerConfig(seed=5))
        curve = train(learner, sandbox, specs("lights", "arithmetic"), episodes=384, eval_every=192,
                      eval_seeds=8, batch_envs=8, seed=5)
        return [{k: v for k, v in p.items() if k != "seconds"} for p in curve], learner

    (curve_a, a), (curve_b, b) = run(), run()
    assert curve_a == curve_b
    assert len(curve_a) == 3
    assert a.scorer.step == b.scorer.step > 0
    for key in a.scorer.params:
        assert np.array_equal(a.scorer.params[key], b.scorer.params[key]), key
