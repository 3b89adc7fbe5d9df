"""TRL's GRPOTrainer on spadegym's live curriculum, one process or several:

    accelerate launch --num_processes 2 examples/trl_curriculum.py MODEL_DIR \
        --config examples/configs/curriculum.toml --out runs/trl-curriculum

The main process serves the curriculum on 127.0.0.1 and writes the run store in --out: `spadegym report`/`export`
read it, and the same command again resumes it. --vllm colocate|server samples with vLLM as TRL documents it
(server: start `VLLM_SERVER_DEV_MODE=1 vllm serve MODEL_DIR` first, on GPUs the trainer does not use).
"""

import argparse
import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from spadegym.adapters.trl_curriculum import trl_curriculum
from spadegym.adapters.trl_env import reply_reward, with_tool_calling

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("--config", default="examples/configs/curriculum.toml")
parser.add_argument("--out", default="runs/trl-curriculum")
parser.add_argument("--max-steps", type=int, default=8)
parser.add_argument("--vllm", choices=["none", "colocate", "server"], default="none")
parser.add_argument(
    "--tool-calls", type=int, default=2, help="turns per rollout (TRL's max_tool_calling_iterations)"
)
parser.add_argument("--completion-length", type=int, default=96)
parser.add_argument("--lr", type=float, default=1e-5)
cli = parser.parse_args()

tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(cli.model))
model = AutoModelForCausalLM.from_pretrained(cli.model)
# TRL turns activation checkpointing on; off, sampling keeps its key-value cache. transformers 5.25 renamed the setting.
checkpointing = next(n for n in ("activation_checkpointing", "gradient_checkpointing") if hasattr(GRPOConfig, n))
args = GRPOConfig(
    output_dir=f"{cli.out}/trainer",
    max_steps=cli.max_steps,
    per_device_train_batch_size=2,
    num_generations=2,  # = the config's group_size
    max_completion_length=cli.completion_length,
    max_tool_calling_iterations=cli.tool_calls,
    learning_rate=cli.lr,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=not torch.cuda.is_available(),
    bf16=torch.cuda.is_available(),  # TRL's default bf16 is ~5x slower on a CPU without bf16 units
    **{checkpointing: False},
    use_vllm=cli.vllm != "none",
    **({"vllm_mode": cli.vllm} if cli.vllm != "none" else {}),
)

with trl_curriculum(cli.config, cli.out, args, prompt="Win the game.") as curriculum:
    trainer = GRPOTrainer(
        model=model,
        args=args,
        processing_class=tokenizer,
        reward_funcs=[reply_reward],
        train_dataset=curriculum.dataset,
        environment_factory=curriculum.environment_factory,
    )
    trainer.train()
    if trainer.accelerator.is_main_process:
        print("curriculum:", json.dumps(curriculum.status()))
