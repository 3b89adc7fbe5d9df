"""An hf: red-team target samples as the search's [train] section says."""

from __future__ import annotations

import pytest

from spadegym.errors import UserError
from spadegym.redteam.config import load_redteam_config
from spadegym.redteam.hunt import build_target


def test_the_train_section_reaches_an_hf_target(tiny_dir):
    config = load_redteam_config(None, {"target": f"hf:{tiny_dir}"},
                                 ["train.max_new_tokens=5", "train.system_prompt=short"])
    target = build_target(config)
    assert target.config.max_new_tokens == 5
    assert target.config.system_prompt == "short"
    assert target.policy.config.max_new_tokens == 5  # the policy samples with it, not only the agent


def test_a_bad_train_setting_is_refused_before_anything_loads(tiny_dir):
    with pytest.raises(UserError, match="'train.dtype'.*'auto', 'float32' or 'bfloat16'"):
        load_redteam_config(None, {"target": f"hf:{tiny_dir}"}, ["train.dtype=float8"])


def test_levels_whose_every_play_overflowed_the_target_are_reported_unscored(tiny_dir, tmp_path):
    from spadegym.redteam.hunt import redteam

    config = load_redteam_config(None, {"target": f"hf:{tiny_dir}", "families": ["take_away"], "budget": 2,
                                        "per_round": 2, "plays": 2, "minimise": False},
                                 ["train.max_seq_len=64", "train.max_new_tokens=4", "train.threads=1"])
    rounds: list[dict] = []
    redteam(config, tmp_path / "suite", on_round=rounds.append)
    [summary] = rounds
    # Every prompt is longer than 64 tokens: each play is the target's failure, none the level's.
    assert summary["valid"] == 2 and summary["failed"] == 0
    assert summary["unscored"] == 2 and summary["episode_failures"] == {"agent": 4}
    assert "max_seq_len" in summary["unscored_because"]
