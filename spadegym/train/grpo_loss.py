"""TRL's GRPO loss used one step at a time: every part of ``GRPOTrainer`` spadegym reads or sets, in one place.

The loop owns generation and rewards, so ``trainer.train()`` is never called; the policy feeds the trainer's
loss batches in the layout it reads. That leans on names TRL keeps private or sets inside ``train()``
(``_get_per_token_logps_and_entropies``, ``_metrics``, ``current_gradient_accumulation_steps``,
``use_vllm``, ...): they are touched here only, and ``tests/train/test_grpo_loss.py`` fails the day TRL moves one.
"""

from __future__ import annotations

import tempfile
import warnings
from typing import Any

#: The trainer attributes TRL's loss reads that ``GRPOLoss`` sets (checked against TRL's source by the tests).
LOSS_READS = ("loss_type", "current_gradient_accumulation_steps", "use_vllm", "vllm_importance_sampling_correction")


class GRPOLoss:
    """A ``GRPOTrainer`` built around ``model`` for its loss, optimizer and log-probabilities; never trained whole."""

    def __init__(self, model: Any, tokenizer: Any, *, lr: float, max_grad_norm: float, loss_type: str,
                 epsilon: float, epsilon_high: float | None, beta: float, epochs: int, temperature: float,
                 cpu: bool, bf16: bool, seed: int, gradient_checkpointing: bool, importance_sampling: bool) -> None:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        with warnings.catch_warnings():  # transformers renamed the Trainer's setting; TRL still sets the old name
            warnings.filterwarnings("ignore", "`gradient_checkpointing` is deprecated", FutureWarning)
            args = GRPOConfig(
                output_dir=tempfile.mkdtemp(prefix="spadegym-trl-"), report_to="none", save_strategy="no",
                learning_rate=lr, lr_scheduler_type="constant", max_grad_norm=max_grad_norm, loss_type=loss_type,
                epsilon=epsilon, epsilon_high=epsilon_high, beta=beta, num_iterations=epochs,
                temperature=temperature, per_device_train_batch_size=2, num_generations=2,
                gradient_accumulation_steps=1, use_cpu=cpu, bf16=bf16, seed=seed, disable_dropout=True,
                logging_strategy="no", gradient_checkpointing=gradient_checkpointing,
            )
        # The loop computes every reward and advantage; TRL's own reward hook must never run.
        self.trainer = GRPOTrainer(model=model, reward_funcs=[_rewards_come_from_the_loop], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": ["-"]}), processing_class=tokenizer)
        if importance_sampling:
            # The loss then weighs tokens by the batch's ``importance_sampling_ratio`` (TRL's correction for vLLM),
            # set after construction: TRL's own vLLM client is never built, the samples come from the loop.
            self.trainer.use_vllm = True
            self.trainer.vllm_importance_sampling_correction = True

    @property
    def reference_model(self) -> Any:
        """The frozen reference TRL keeps for the KL term (None with LoRA: the base is the adapter disabled)."""
        return self.trainer.ref_model

    def create_optimizer(self) -> Any:
        return self.trainer.create_optimizer()

    def prepare(self, loss_type: str, micro_batches: int) -> None:
        """Before a step: the loss aggregation of the role trained, and how many micro-batches make the step (the
        loss divides by it, as ``train()`` would have set)."""
        self.trainer.loss_type = loss_type
        self.trainer.current_gradient_accumulation_steps = micro_batches
        self.trainer.args.steps_per_generation = micro_batches

    def backward(self, model: Any, batch: dict[str, Any]) -> float:
        """TRL's GRPO loss of one micro-batch, back-propagated; returns its value."""
        with self.trainer.compute_loss_context_manager():
            loss = self.trainer.compute_loss(model, batch)
        self.trainer.accelerator.backward(loss)
        return float(loss.detach())

    def loss(self, model: Any, batch: dict[str, Any]) -> Any:
        """TRL's GRPO loss of one micro-batch, without a backward pass."""
        return self.trainer.compute_loss(model, batch)

    def clip_grad_norm(self, parameters: Any, max_norm: float) -> Any:
        return self.trainer.accelerator.clip_grad_norm_(parameters, max_norm)

    def token_logprobs(self, model: Any, input_ids: Any, attention: Any, completion_length: int) -> Any:
        """``model``'s per-token log-probabilities of the last ``completion_length`` tokens, as the loss computes them
        (the sampling temperature applied)."""
        logps, _, _ = self.trainer._get_per_token_logps_and_entropies(model, input_ids, attention, completion_length)
        return logps

    def take_metrics(self) -> dict[str, list[float]]:
        """What TRL's loss logged since the last call (entropy, clip ratios, KL, ...), then cleared."""
        metrics = self.trainer._metrics["train"]
        taken = {key: list(values) for key, values in metrics.items()}
        metrics.clear()
        return taken


def _rewards_come_from_the_loop(*args: Any, **kwargs: Any) -> list[float]:
    raise RuntimeError("spadegym computes rewards in its loop; the trainer's reward hook is not used")
