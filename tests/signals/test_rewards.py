"""Designer rewards and agent advantages, checked against hand-computed values."""

import numpy as np
import pytest

from spadegym.signals import (
    EnvStats,
    band,
    blend,
    center_by_skill,
    get_designer_reward,
    group_advantages,
    hint_regret,
    invalid_reward,
    learnability,
    learning_potential,
    oracle_regret,
    pearson,
    regret_floored,
)


def stats(p=0.5, ph=0.5, r=None, rh=None, oracle=None, ema=None):
    return EnvStats(p, ph, p if r is None else r, ph if rh is None else rh, oracle_return=oracle, skill_ema=ema)


@pytest.mark.parametrize(("p", "value"), [(0.5, 1.0), (0.4, 1.0), (0.6, 1.0), (0.275, 0.5), (0.15, 0.0),
                                          (0.0, 0.0), (0.85, 0.0), (0.725, 0.5)])
def test_band_is_the_paper_plateau(p, value):
    assert band(stats(p)) == pytest.approx(value)


def test_regret_and_blend():
    s = stats(0.2, 0.8)
    assert hint_regret(s) == pytest.approx(0.6)
    # regret term saturates at 0.15; band(0.2) = 1 - 0.2/0.25 = 0.2
    assert blend(s) == pytest.approx(0.4 * 1.0 + 0.6 * 0.2)
    assert blend(stats(0.5, 0.5 + 0.075)) == pytest.approx(0.4 * 0.5 + 0.6)
    assert regret_floored(stats(0.6, 0.2)) == 0.0 and hint_regret(stats(0.6, 0.2)) == pytest.approx(-0.4)


def test_other_rewards():
    assert learnability(stats(0.5)) == pytest.approx(1.0)
    assert learnability(stats(1.0)) == 0.0
    assert learning_potential(stats(0.9, ema=0.3)) == pytest.approx(0.6)
    assert oracle_regret(stats(0.25, oracle=1.0)) == pytest.approx(0.75)
    assert oracle_regret(stats(0.25, 0.75)) == pytest.approx(0.5)  # falls back to hint regret


def test_reward_lookup_by_name_and_user_function():
    assert get_designer_reward("blend") is blend
    assert get_designer_reward("spadegym.signals.rewards:band") is band
    with pytest.raises(ValueError, match="did you mean .blend."):
        get_designer_reward("blnd")
    with pytest.raises(ValueError, match="cannot be imported"):
        get_designer_reward("no.such.module:f")


def test_invalid_proposals_always_earn_less():
    valid = center_by_skill([0.9, 0.1, 0.5, 0.5], ["a", "a", "b", "b"])
    assert valid == pytest.approx([0.4, -0.4, 0.0, 0.0])
    assert invalid_reward(valid) < min(valid)
    assert invalid_reward([]) < 0


def test_group_advantages_z_score_within_groups():
    adv = group_advantages([1, 0, 1, 0, 1, 1], ["g", "g", "g", "g", "h", "h"])
    assert adv[:4] == pytest.approx([1, -1, 1, -1], abs=1e-4)
    assert np.all(adv[4:] == 0)  # no spread, no signal


def test_pearson():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2], [1, 2]) is None
    assert pearson([1, 1, 1], [1, 2, 3]) is None
