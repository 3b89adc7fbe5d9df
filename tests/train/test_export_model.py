"""`spadegym export RUN --what model`: the run's trained policy as a Hugging Face model folder, and its push."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "store"))
from hub_standin import HubStandIn  # noqa: E402
from synthetic_run import build_run  # noqa: E402

from spadegym.errors import UserError  # noqa: E402
from spadegym.store.model_export import export_model  # noqa: E402
from spadegym.train import Policy, TrainConfig  # noqa: E402


def card(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---\n", 2)[1])


@pytest.fixture(scope="module")
def trained_run(tiny_dir, tmp_path_factory):
    """A run whose last round kept a LoRA policy whose adapter moved off zero (so merging changes the weights)."""
    import torch

    run_dir = tmp_path_factory.mktemp("export") / "run"
    store = build_run(run_dir, rounds=2)
    policy = Policy.from_path(tiny_dir, TrainConfig(lora=True))
    with torch.no_grad():
        for name, weight in policy.model.named_parameters():
            if "lora_B" in name:
                weight.fill_(0.01)
    policy.save(store.checkpoint_dir / "round-0003")
    with store.round(3) as tx:  # the round that kept it, as the loop commits one
        tx.save_state("learner", {"checkpoint": "round-0003", "round": 3})
        tx.finish({"win_rate": 0.5})
    probe = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        expected = policy.model(probe).logits
    store.close()
    return run_dir, probe, expected


def test_the_merged_model_loads_with_transformers_and_is_pushed_as_a_model_repo(trained_run, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run_dir, probe, expected = trained_run
    out = tmp_path / "model"
    with HubStandIn() as hub:
        done = subprocess.run(
            [sys.executable, "-m", "spadegym", "export", str(run_dir), "--what", "model", "--out", str(out),
             "--push-to-hub", "me/agent"], capture_output=True, text=True, timeout=300,
            env={**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": "local", "HF_HOME": str(tmp_path / "hf-home")})
        assert done.returncode == 0, done.stderr[-3000:]
        assert not hub.unknown, hub.unknown
        pushed = hub.files["me/agent"]
    assert done.stdout.split() == [str(out), f"{hub.url}/me/agent"]
    model = AutoModelForCausalLM.from_pretrained(out)  # the LoRA merged in: the trained policy's outputs
    with torch.no_grad():
        assert torch.allclose(model(probe).logits, expected, atol=1e-4)
    assert AutoTokenizer.from_pretrained(out).chat_template
    meta = card(out)
    assert {"spadegym", "grpo"} <= set(meta["tags"]) and meta["library_name"] == "transformers"
    assert "# run" in (out / "README.md").read_text()
    assert {"README.md", "config.json", "model.safetensors", "tokenizer.json"} <= set(pushed)
    assert not any(name.endswith((".bin", ".pt")) for name in pushed)


def test_the_adapter_alone_loads_over_the_base_with_peft(trained_run, tiny_dir, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    run_dir, probe, expected = trained_run
    out = export_model(run_dir, tmp_path / "adapter", merge=False)
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in out.iterdir()}
    assert card(out)["library_name"] == "peft"
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), out)
    with torch.no_grad():
        assert torch.allclose(model(probe).logits, expected, atol=1e-4)


def test_a_run_that_trained_no_model_is_one_sentence(tmp_path):
    build_run(tmp_path / "run", rounds=1).close()
    with pytest.raises(UserError, match="holds no trained policy"):
        export_model(tmp_path / "run")
