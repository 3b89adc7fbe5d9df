"""Settings of a model that trains in the loop (the run config's ``[train]`` section).

    agent = "hf:/path/to/model"        # a local Hugging Face directory, or a .gguf file
    designer = "hf:/path/to/model"     # the same path: one policy, two roles (shared weights)

    [train]
    lr = 1e-5
    epsilon_high = 0.28               # the paper's asymmetric clipping (0.2 / 0.28)
    lora = true

Every knob of the GRPO update itself (clipping, loss aggregation, KL) is passed
to TRL's ``GRPOConfig``; the rest says what the loop samples and trains.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

LossType = Literal["dapo", "grpo", "bnpo", "dr_grpo", "cispo", "sapo"]


class TrainConfig(BaseModel):
    """How a local Hugging Face model samples and learns (GRPO through TRL)."""

    model_config = {"extra": "forbid"}

    # -- what trains --------------------------------------------------------
    train_agent: bool = Field(True, description="Update the policy on the agent's episodes.")
    train_designer: bool = Field(True, description="Update the policy on the designer's completions (when the designer is hf:).")
    designer_delay: int = Field(0, ge=0, description="Rounds a designer completion waits before it trains (the paper's delayed designer updates: its win rate is then measured over more plays).")
    # -- the GRPO update (TRL) ------------------------------------------------
    lr: float = Field(1e-5, gt=0, description="AdamW learning rate.")
    loss_type: LossType = Field(
        "grpo", description="TRL's GRPO loss aggregation for the agent ('grpo': each episode's tokens averaged; a losing episode plays more turns, and summed over tokens its per-turn tokens, the end of a turn included, would outweigh a winner's and be pushed down; 'dapo': tokens of the whole batch).")
    designer_loss_type: LossType = Field(
        "dapo", description="TRL's GRPO loss aggregation for the designer's single completions ('dapo', TRL's and the paper's default: tokens of the whole batch, no length bias).")
    epsilon: float = Field(0.2, gt=0, description="Lower clipping bound of the probability ratio (1 - epsilon).")
    epsilon_high: float = Field(0.28, gt=0, description="Upper clipping bound (1 + epsilon_high); paper and DAPO: 0.28.")
    beta: float = Field(0.0, ge=0, description="KL penalty against the starting weights (0: none, no reference model kept; >0 needs a model directory or LoRA).")
    epochs: int = Field(1, ge=1, le=8, description="Optimizer passes over each round's samples (after the first, the ratio is clipped).")
    micro_batch: int = Field(4, ge=1, description="Most sequences per forward/backward pass (gradients accumulate to one step per pass).")
    micro_batch_tokens: int = Field(4096, ge=64, description="Most padded tokens per forward/backward pass: long multi-turn episodes go fewer at a time (activation memory grows with it).")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient-norm clip per optimizer step.")
    gradient_checkpointing: bool = Field(True, description="Recompute activations in the backward pass: less memory, about a third more compute (a small model on short episodes can turn it off).")
    lora: bool = Field(False, description="Train a LoRA adapter (peft) instead of every weight.")
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA scale numerator.")
    # -- sampling -------------------------------------------------------------
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (the trainer scores with the same one).")
    max_new_tokens: int = Field(64, ge=1, description="Largest agent reply per turn, in tokens.")
    designer_max_new_tokens: int = Field(768, ge=1, description="Largest designer completion (an environment file), in tokens.")
    max_seq_len: int = Field(2048, ge=64, description="An episode stops at this many tokens (prompt, replies and observations).")
    action_rule: Literal["strict", "forgiving"] = Field(
        "strict", description="strict: the action is the last \\boxed{}; forgiving: else the last valid action the reply names (small models).")
    system_prompt: Literal["reason", "short"] = Field(
        "reason", description="reason: think, then box the action; short: answer with the boxed action only, with a worked example (small models).")
    designer_repair_turns: int = Field(0, ge=0, description="Repair turns of an hf: designer (each is another long generation; its reward is that of the first attempt anyway).")
    designer_format_reward: float = Field(0.5, ge=0, lt=1, description="An invalid designer completion earns this times the share of the gate's checks it passed (still below every valid one: invalid rewards sit a full unit below); 0: all invalid ones equal.")
    reply_prefix: str = Field("", description="Text every agent reply starts with, given to the model rather than sampled (e.g. '\\boxed{' so a small model only writes the action); its tokens carry no loss.")
    format_reward: float = Field(0.0, ge=0, description="Added to an episode's return per turn answered inside \\boxed{} (divided by turns), for advantages only; the loop's scores never see it.")
    progress_reward: float = Field(0.0, ge=0, description="Adds this times the sum of the environment's rewards before its last one (partial progress: a right step, an invalid action) to an episode's return, for advantages only: with success alone, a group whose plays all lose has no signal.")
    # -- where the trained roles sample ------------------------------------------
    generation: Literal["transformers", "vllm"] = Field(
        "transformers", description="transformers: generate inside the training process; vllm: sample through vLLM's OpenAI-compatible server (started for the run, or vllm_urls), with the weights pushed back after every update.")
    vllm_urls: list[str] = Field(default_factory=list, description="vLLM servers already serving the policy's model (several: data-parallel sampling); empty: spadegym starts one. Start them with --logprobs-mode processed_logprobs and VLLM_SERVER_DEV_MODE=1, and with lora --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True.")
    vllm_python: str | None = Field(None, description="The Python with vLLM that starts the server (unset: $SPADEGYM_VLLM_PYTHON, else this one).")
    vllm_args: list[str] = Field(default_factory=list, description="More arguments for the server spadegym starts (e.g. ['--tensor-parallel-size', '2', '--gpu-memory-utilization', '0.5']).")
    vllm_start_timeout_s: float = Field(600.0, gt=0, description="How long the started server may take to answer.")
    vllm_weights_dir: str | None = Field(None, description="Where updated weights are saved for the servers to read (unset: a temporary folder; servers on other machines need a shared one).")
    importance_sampling_cap: float = Field(3.0, gt=0, description="vllm: the trainer's loss weighs each token by min(p_trainer / p_sampler, cap), TRL's truncated importance sampling for a sampler whose numbers differ from the trainer's.")
    # -- machinery --------------------------------------------------------------
    device: str = Field("auto", description="auto | cpu | cuda: where the policy lives.")
    dtype: Literal["auto", "float32", "bfloat16"] = Field("auto", description="Weights dtype (auto: bfloat16 on a GPU, float32 on the CPU).")
    generation_batch: int = Field(32, ge=1, description="Sequences generated in one batch.")
    cache_mb: int = Field(2048, ge=0, description="Memory for the keys and values of live episodes between their turns, so a turn encodes only its new tokens (SmolLM2-135M in float32: 46 kB a token, 64 episodes of 700 tokens in 2 GB); past the limit the episodes that do not fit encode their whole conversation every turn, as all do at 0.")
    threads: int | None = Field(None, ge=1, description="CPU threads for torch (unset: torch's default); 1 is often much faster on a machine whose cores are busy with other work.")
