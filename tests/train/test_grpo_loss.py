"""The parts of TRL's GRPOTrainer that spadegym reaches without ``train()`` are still where ``GRPOLoss`` reaches them.

These fail the day TRL renames or moves one of them, before any run does.
"""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from spadegym.train import Policy, Sample, Trace, TrainConfig  # noqa: E402
from spadegym.train.grpo_loss import LOSS_READS  # noqa: E402
from spadegym.train.models import load_model  # noqa: E402


def test_the_private_log_probability_helper_keeps_its_signature():
    helper = trl.GRPOTrainer._get_per_token_logps_and_entropies
    names = list(inspect.signature(helper).parameters)
    assert names[:5] == ["self", "model", "input_ids", "attention_mask", "logits_to_keep"]


def test_the_loss_reads_every_attribute_and_batch_key_the_policy_sets():
    source = inspect.getsource(trl.GRPOTrainer)
    for name in LOSS_READS:
        assert f"self.{name}" in source, f"TRL's GRPOTrainer no longer reads self.{name}"
    loss = inspect.getsource(trl.GRPOTrainer._compute_loss)
    # Policy.batch's keys, and the ones update() adds, are what the loss reads.
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask", "advantages",
                "old_per_token_logps", "ref_per_token_logps", "importance_sampling_ratio", "num_items_in_batch"):
        assert f'"{key}"' in loss, f"TRL's GRPO loss no longer reads inputs[{key!r}]"


def test_a_step_goes_through_the_loss_and_hands_back_its_metrics_once(tiny_dir):
    model, tokenizer = load_model(tiny_dir)
    policy = Policy(model, tokenizer, TrainConfig(max_new_tokens=6), seed=0)
    prompt = policy.chat.prompt([{"role": "user", "content": "say 8"}])
    samples = []
    for i, (ids, logprobs) in enumerate(policy.generate([prompt] * 2, 6)):
        trace = Trace(list(prompt))
        trace.add_sampled(ids, logprobs)
        samples.append(Sample(trace, 1.0 if i else -1.0, "agent"))
    stats = policy.update(samples)
    assert "entropy" in stats and stats["updates"] == 1  # TRL's logged entropy came back through take_metrics
    assert policy.trainer.take_metrics() == {}  # ... and was cleared
    assert policy.trainer.reference_model is None  # beta = 0: no reference model is kept
    policy.close()
