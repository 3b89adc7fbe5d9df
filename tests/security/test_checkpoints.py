"""A learner checkpoint is data: a crafted ``weights.npz`` or ``learner.json`` is one CheckpointError sentence,
refused from the zip directory and the .npy headers before anything the size of a declared array is allocated."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy

from spadegym.agents.learner import CheckpointError, Learner, LearnerConfig, make_learner

HIDDEN = 8


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    learner = Learner(LearnerConfig(seed=1, hidden=HIDDEN, hash_bits=10))
    learner.scorer.touched[[3, 7]] = True
    return learner.save(tmp_path / "ckpt")


def saved_arrays(checkpoint: Path) -> dict[str, np.ndarray]:
    with np.load(checkpoint / "weights.npz") as state:
        return dict(state)


def rewrite(checkpoint: Path, **arrays: np.ndarray | None) -> None:
    """The checkpoint's arrays with ``arrays`` replaced (None: removed)."""
    state = {**saved_arrays(checkpoint), **arrays}
    np.savez(checkpoint / "weights.npz", **{k: v for k, v in state.items() if v is not None})


def refused(checkpoint: Path, *words: str) -> str:
    with pytest.raises(CheckpointError) as caught:
        make_learner(str(checkpoint))
    message = str(caught.value)
    assert "\n" not in message and "retrain" in message
    for word in words:
        assert word in message, message
    return message


def test_a_deflated_gigabyte_array_is_refused_from_its_header_before_allocation(checkpoint: Path):
    """1 GiB declared in an array a few hundred kilobytes long on disk: refused with under 64 MB allocated."""
    state = saved_arrays(checkpoint)
    declared = {"descr": "<f4", "fortran_order": False, "shape": (1 << 24, 16)}
    with zipfile.ZipFile(checkpoint / "weights.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in state.items():
            if name != "p_E":
                with archive.open(name + ".npy", "w") as member:
                    npy.write_array(member, array)
        with archive.open("p_E.npy", "w", force_zip64=True) as member:
            npy.write_array_header_1_0(member, declared)
            member.write(bytes(32 << 20))  # the start of the gigabyte: zeros deflate a thousandfold
    assert (checkpoint / "weights.npz").stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as caught:
            make_learner(str(checkpoint))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
    assert "p_E has shape (16777216, 16)" in str(caught.value)


@pytest.mark.parametrize(("arrays", "words"), [
    ({"p_E": None}, ["missing p_E"]),
    ({"extra": np.zeros(2)}, ["unexpected extra"]),
    ({"p_b": np.zeros(HIDDEN, dtype=np.complex64)}, ["p_b", "complex64"]),
    ({"p_u": np.array(["a", "b"])}, ["p_u", "dtype"]),
    ({"p_w": np.array([{"pickled": 1}] * HIDDEN, dtype=object)}, ["p_w", "object"]),
    ({"p_E": np.zeros((2, HIDDEN + 1), dtype=np.float32)}, ["p_E", "shape (2, 9)"]),
    ({"rows": np.array([[3, 7]])}, ["rows", "shape (1, 2)"]),
    ({"rows": np.array([3, 1 << 20])}, ["outside 0..1023"]),
    ({"rows": np.array([3, -1])}, ["outside 0..1023"]),
])
def test_malformed_weights_are_one_sentence(checkpoint: Path, arrays: dict, words: list[str]):
    rewrite(checkpoint, **arrays)
    refused(checkpoint, *words)


def test_weights_that_are_not_an_archive_are_one_sentence(checkpoint: Path):
    (checkpoint / "weights.npz").write_bytes(zlib.compress(b"not a zip"))
    refused(checkpoint, "not an npz archive")


@pytest.mark.parametrize(("meta", "words"), [
    ([], ["checkpoint format None"]),
    ({"format": 1, "config": [1], "adam_step": 0}, ["config must be a table"]),
    ({"format": 1, "config": {}, "adam_step": []}, ["adam_step"]),
    ({"format": 1, "config": {}, "adam_step": 0, "rng": "PCG64"}, ["unreadable"]),
    ({"format": 1, "config": {"hash_bits": 99}, "adam_step": 0}, ["hash_bits"]),
])
def test_malformed_settings_are_one_sentence(checkpoint: Path, meta: object, words: list[str]):
    (checkpoint / "learner.json").write_text(json.dumps(meta))
    refused(checkpoint, *words)


def test_deeply_nested_settings_are_one_sentence(checkpoint: Path):
    (checkpoint / "learner.json").write_text('{"format": 1, "config": ' + "[" * 5000 + "]" * 5000 + "}")
    refused(checkpoint, "nested 5001 levels deep")


def test_a_checkpoint_the_learner_wrote_still_loads_exactly(checkpoint: Path):
    loaded = make_learner(str(checkpoint))
    assert loaded.scorer.touched.sum() == 2 and loaded.config.hidden == HIDDEN
