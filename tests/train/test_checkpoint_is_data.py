"""A policy checkpoint is data: it loads without pickle's code execution, so a crafted file is one sentence and
never runs (issue 56.3), while an older checkpoint's rng.pt of tensors and numpy arrays still resumes."""

from __future__ import annotations

import os
import pickle
import random
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spadegym.errors import UserError  # noqa: E402
from spadegym.train import Policy, TrainConfig  # noqa: E402
from spadegym.train.models import load_model  # noqa: E402
from spadegym.train.policy import LEGACY_RNG_FILE, OPTIMIZER_FILE, RNG_FILE  # noqa: E402


class WritesMarker:
    """Unpickled, it calls ``os.system``: what a checkpoint loaded with pickle would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def make_policy(tiny_dir: Path) -> Policy:
    model, tokenizer = load_model(tiny_dir)
    return Policy(model, tokenizer, TrainConfig(max_new_tokens=4), seed=0)


@pytest.fixture(scope="module")
def policy(tiny_dir: Path) -> Policy:
    return make_policy(tiny_dir)


@pytest.fixture
def checkpoint(policy: Policy, tmp_path: Path) -> Path:
    return policy.save(tmp_path / "ckpt")


def one_sentence(message: str) -> bool:
    return "\n" not in message and "Traceback" not in message and message.count(". ") == 0


def test_a_crafted_rng_pt_is_refused_in_one_sentence_and_runs_nothing(policy: Policy, checkpoint: Path,
                                                                     tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (checkpoint / RNG_FILE).unlink()  # an older checkpoint's layout: the random state in rng.pt
    torch.save({"torch": torch.get_rng_state(), "python": WritesMarker(marker), "numpy": None},
               checkpoint / LEGACY_RNG_FILE)
    with pytest.raises(UserError) as refused:
        policy.load(checkpoint)
    assert not marker.exists()
    said = str(refused.value)
    assert said.startswith(f"{checkpoint / LEGACY_RNG_FILE} is not a checkpoint file spadegym can read without "
                           "running code in it") and one_sentence(said), said


def test_a_crafted_optimizer_file_is_refused_in_one_sentence_and_runs_nothing(policy: Policy, checkpoint: Path,
                                                                             tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (checkpoint / OPTIMIZER_FILE).write_bytes(pickle.dumps({"state": WritesMarker(marker)}))
    with pytest.raises(UserError) as refused:
        policy.load(checkpoint)
    assert not marker.exists()
    assert str(refused.value).startswith(f"{checkpoint / OPTIMIZER_FILE} is not a checkpoint file spadegym can read")


def test_the_random_state_is_saved_as_json_and_restored(policy: Policy, checkpoint: Path) -> None:
    assert (checkpoint / RNG_FILE).read_text().startswith('{"torch": [')
    assert not (checkpoint / LEGACY_RNG_FILE).exists()
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    saved = policy.save(checkpoint.parent / "again")  # the updates are unchanged: same dir skips, so a new one
    drawn = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    policy.load(saved)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn


def test_an_older_checkpoints_rng_pt_of_arrays_still_resumes(policy: Policy, checkpoint: Path) -> None:
    (checkpoint / RNG_FILE).unlink()
    random.seed(2), np.random.seed(2), torch.manual_seed(2)
    torch.save({"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()},
               checkpoint / LEGACY_RNG_FILE)
    drawn = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    policy.load(checkpoint)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn


def test_an_rng_json_not_written_by_spadegym_is_one_sentence(policy: Policy, checkpoint: Path) -> None:
    (checkpoint / RNG_FILE).write_text('{"torch": [1, 2], "python": [3, [], null], "numpy": {}}')
    with pytest.raises(UserError) as refused:
        policy.load(checkpoint)
    assert str(refused.value).startswith(f"the random state in {checkpoint} is not one spadegym wrote")
