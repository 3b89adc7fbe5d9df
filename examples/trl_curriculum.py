"""TRL's GRPOTrainer on spadegym's live curriculum, one process or several:

    accelerate launch --num_processes 2 examples/trl_curriculum.py MODEL_DIR \
        --config examples/configs/curriculum.toml --out runs/trl-curriculum

(add --cpu to accelerate on a machine without GPUs). The main process serves the curriculum on 127.0.0.1 and
writes the run store in --out: `spadegym report`/`export` read it, and the same command again resumes it.
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
cli = parser.parse_args()

tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(cli.model))
model = AutoModelForCausalLM.from_pretrained(cli.model)
args = GRPOConfig(
    output_dir=f"{cli.out}/trainer",
    max_steps=cli.max_steps,
    per_device_train_batch_size=2,
    num_generations=2,
    max_completion_length=96,
    max_tool_calling_iterations=2,
    learning_rate=1e-5,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=not torch.cuda.is_available(),
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
