"""A tiny chat model built on the spot (no download) for the training tests."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("transformers")


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """The tiny model gains nothing from threads, and on a busy machine they wait on each other."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def family_corpus() -> list[str]:
    from spadegym.families import list_families

    return [f.render(f.level_knobs(0)) for f in list_families()]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory, family_corpus):
    """A 2-layer Llama with a BPE tokenizer trained on the families' files, saved as a model directory."""
    from spadegym.train.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0, corpus=family_corpus, vocab_size=1000)
