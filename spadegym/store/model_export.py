"""A run's trained policy as a Hugging Face model folder: weights in safetensors, the tokenizer, a model card.

    export_model(run_dir)                   # RUN_DIR/exports/model: the LoRA merged into the base (or all weights)
    export_model(run_dir, merge=False)      # the LoRA adapter alone, for PEFT to load over the base
    push_folder(folder, "me/my-agent", "model")   # store/hub.py

The policy comes from the checkpoint of the run's last complete round (``train/policy.py`` saves it); its base
model is the one the run trained, read from this machine only (an export never downloads). A checkpoint is data:
weights load as safetensors only, and nothing in it runs. The folder is built in a staging folder and copied into
the output file by file, never through a link.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UserError, install_hint
from ..jsondata import UntrustedJSONError, loads
from ..outputs import make_folder, open_output
from ..train.policy import STATE_FILE

#: A Hub repo id (owner/name); a base model named so goes into the card's ``base_model``.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")


def export_model(run_dir: str | Path, out: str | Path | None = None, *, merge: bool = True) -> Path:
    """Write the run's trained policy as a model folder (``merge``: full weights; else the LoRA adapter alone) with
    its tokenizer and card, to ``out`` (default ``RUN_DIR/exports/model``); returns the folder."""
    from .runstore import RunStore

    _require_train_extra()
    with RunStore.open(run_dir) as store:
        checkpoint = store.learner_checkpoint()
        facts = _run_facts(store)
        target = Path(out) if out is not None else store.dir / "exports" / "model"
        root = target if out is not None else store.dir
    if checkpoint is None:
        raise UserError(f"{run_dir} holds no trained policy: only a run whose agent or designer is an hf: model "
                        "keeps one (the built-in learner and model servers train nothing to export).")
    state = _policy_state(checkpoint)
    with tempfile.TemporaryDirectory(prefix="spadegym-model-") as staging:
        folder = Path(staging)
        base = _base_model(state)
        library = _write_weights(checkpoint / "weights", bool(state.get("lora")), merge, base, folder)
        _tokenizer(base).save_pretrained(folder)
        (folder / "README.md").write_text(model_card(state, facts, base, library), encoding="utf-8")
        _copy_into(folder, target, root)
    return target


def _require_train_extra() -> None:
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise UserError("exporting a model needs torch, transformers and peft; install them with "
                        f"{install_hint('train')}.") from None


def _policy_state(checkpoint: Path) -> dict[str, Any]:
    try:
        state = loads((checkpoint / STATE_FILE).read_bytes(), f"{checkpoint / STATE_FILE}")
    except (OSError, UntrustedJSONError) as exc:
        raise UserError(f"the run's checkpoint {checkpoint} cannot be read ({exc}); export it from a run spadegym "
                        "wrote.") from None
    if not isinstance(state, dict) or not isinstance(state.get("source"), str):
        raise UserError(f"the run's checkpoint {checkpoint} names no base model; export it from a run spadegym wrote.")
    return state


def _base_model(state: dict[str, Any]) -> Path:
    """The base model's folder on this machine: an export reads it, never downloads it."""
    base = Path(state["source"]).expanduser()
    if not (base / "config.json").is_file():
        raise UserError(f"the run's base model {state['source']} is not on this machine (no config.json there); "
                        "the export needs it to add the tokenizer and merge the weights.")
    return base


def _write_weights(weights: Path, lora: bool, merge: bool, base: Path, folder: Path) -> str:
    """Save the policy's weights into ``folder`` as safetensors; returns the library that loads them."""
    from transformers import AutoModelForCausalLM

    try:
        if not lora:
            if not merge:
                raise UserError("this run trained all of the model's weights (train.lora false), so it has no "
                                "adapter to export; export the model without --adapter.")
            model = AutoModelForCausalLM.from_pretrained(weights, use_safetensors=True)
        else:
            from peft import PeftModel

            model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, use_safetensors=True),
                                              weights, use_safetensors=True)
            if merge:
                model = model.merge_and_unload()
    except (OSError, ValueError) as exc:
        raise UserError(f"the run's checkpoint weights in {weights} do not load ({' '.join(str(exc).split())[:160]})"
                        "; export a run spadegym wrote, with its base model.") from None
    model.save_pretrained(folder, safe_serialization=True)
    return "peft" if lora and not merge else "transformers"


def _tokenizer(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base, local_files_only=True)


def _run_facts(store: Any) -> dict[str, Any]:
    """What the card says of the run: its name, roles, rounds and the last round's figures."""
    rounds = store.rounds()
    last = rounds[-1] if rounds else {}
    config = store.config
    return {"name": store.dir.resolve().name, "agent": str(config.get("agent")), "designer": str(config.get("designer")),
            "rounds": len(rounds), "win_rate": last.get("win_rate"), "heldout_success": last.get("heldout_success")}


def model_card(state: dict[str, Any], facts: dict[str, Any], base: Path, library: str) -> str:
    """The model card: the Hub's YAML metadata (license and base model when known, tags) and what the run did."""
    from huggingface_hub import ModelCardData

    from .. import __version__

    base_id = _hub_id(state["source"], base)
    base_meta = _front_matter(base / "README.md")
    data = ModelCardData(license=base_meta.get("license"), base_model=base_id, library_name=library,
                         pipeline_tag="text-generation", tags=["spadegym", "trl", "grpo", "reinforcement-learning",
                                                               "self-play"])
    shown = {key: _plain(value) for key, value in facts.items()}
    kind = "a LoRA adapter (load it over the base model with PEFT)" if library == "peft" else "the trained weights"
    lines = [f"# {shown['name']}", "",
             f"A policy trained by spadegym {__version__} in self-play with GRPO: {kind}.", "",
             f"- base model: {_plain(base_id or base.name)}",
             f"- agent: `{shown['agent']}`; designer: `{shown['designer']}`",
             f"- rounds: {shown['rounds']}; updates: {_plain(state.get('updates'))}",
             f"- last round's win rate: {shown['win_rate']}; held-out success: {shown['heldout_success']}", ""]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines)


def _hub_id(source: str, base: Path) -> str | None:
    """The base model's Hub id: the source when it is one, else the ``_name_or_path`` its config keeps if that is."""
    if _REPO_ID.match(source) and not Path(source).expanduser().exists():
        return source
    try:
        named = loads((base / "config.json").read_bytes(), "the base model's config").get("_name_or_path")
    except (OSError, UntrustedJSONError, AttributeError):
        return None
    return named if isinstance(named, str) and _REPO_ID.match(named) else None


def _front_matter(readme: Path) -> dict[str, Any]:
    """The YAML metadata of a model card, or nothing."""
    import yaml

    try:
        text = readme.read_text(encoding="utf-8")[:65536]
        meta = yaml.safe_load(text.split("---\n", 2)[1]) if text.startswith("---\n") else {}
    except (OSError, UnicodeDecodeError, IndexError, yaml.YAMLError):
        return {}
    return meta if isinstance(meta, dict) and isinstance(meta.get("license", ""), str) else {}


def _plain(value: Any) -> str:
    """Stored text as one bounded line with no markup: a run's settings are anyone's text."""
    return re.sub(r"[<>`|\[\]]", "", " ".join(str(value).split()))[:120]


def _copy_into(staging: Path, target: Path, root: Path) -> None:
    """Copy the staged files into ``target``, never through a link below ``root``."""
    make_folder(target, root)
    for path in sorted(staging.rglob("*")):
        if path.is_file():
            with path.open("rb") as source, open_output(target / path.relative_to(staging), root, "wb", None) as out:
                shutil.copyfileobj(source, out)


__all__ = ["export_model", "model_card"]
