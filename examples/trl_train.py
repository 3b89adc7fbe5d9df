"""Train a chat model with TRL's GRPOTrainer on spadegym levels: python examples/trl_train.py MODEL_DIR

MODEL_DIR: any chat model; SmolLM2, whose template has no tool calling, works too:
python examples/trl_train.py "$(spadegym models prepare smollm2)"
"""

import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from spadegym.adapters.trl_env import environment_factory, level_dataset, reply_reward, with_tool_calling

model_dir = sys.argv[1]
tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(model_dir))  # a ChatML template gets tool calls
model = AutoModelForCausalLM.from_pretrained(model_dir)
# TRL turns activation checkpointing on; off, sampling keeps its key-value cache. transformers 5.25 renamed the setting.
checkpointing = next(n for n in ("activation_checkpointing", "gradient_checkpointing") if hasattr(GRPOConfig, n))

trainer = GRPOTrainer(
    model=model, processing_class=tokenizer,
    args=GRPOConfig(output_dir="grpo-out", max_steps=1, per_device_train_batch_size=4, num_generations=4,
                    max_completion_length=24, learning_rate=5e-5, logging_steps=1, save_strategy="no",
                    report_to="none", use_cpu=not torch.cuda.is_available(),
                    bf16=torch.cuda.is_available(),  # TRL's default bf16 is ~5x slower on a CPU without bf16 units
                    **{checkpointing: False}),
    # reply_reward: a reply naming a valid action earns a share before the model calls tools; get_reward adds the game's
    reward_funcs=[reply_reward],
    train_dataset=level_dataset("examples/pool/", rows=8), environment_factory=environment_factory("examples/pool/"),
)
trainer.train()
print("steps:", trainer.state.global_step)
