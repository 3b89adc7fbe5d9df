"""Does TRL's environment mode learn on spadegym levels with the small model spadegym prepares?

``GRPOTrainer(environment_factory=...)`` over the example pool (number guessing,
a key and a door), SmolLM2-135M-Instruct by default (``spadegym models prepare
smollm2``; any local model directory with --model). The model writes no tool
call, so the game's own reward (``get_reward``) is 0 for every rollout and GRPO
has nothing to learn from; ``reply_reward`` scores a reply that calls no tool
by the valid action it names (played in the game, a share of the reward) and a
tool call in full. The figure: the mean reward of the first steps and of the
last steps.

    python benchmarks/trl_learns.py                    # 30 steps of 8 rollouts on the CPU
    python benchmarks/trl_learns.py --steps 60 --json  # last line: one JSON object
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from statistics import mean

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # nothing leaves the machine
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

POOL = Path(__file__).resolve().parent.parent / "examples" / "pool"


def train(args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from spadegym.adapters.trl_env import environment_factory, level_dataset, reply_reward, with_tool_calling

    torch.set_num_threads(args.threads or torch.get_num_threads())
    model_dir = args.model or _prepared_smollm2()
    tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    config = GRPOConfig(
        output_dir=str(Path(args.out)), max_steps=args.steps, per_device_train_batch_size=args.generations,
        num_generations=args.generations, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=2, learning_rate=args.lr, temperature=args.temperature, beta=0.0,
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=not torch.cuda.is_available(), seed=args.seed,
        # TRL defaults to bf16 autocast even on a CPU, which without bf16 instructions runs it about 5x slower
        # than float32.
        bf16=args.bf16 if args.bf16 is not None else torch.cuda.is_available(),
        # TRL's default checkpoints activations, which turns the key-value cache off: every sampled token then
        # re-encodes the whole prompt (a step of SmolLM2 took minutes on a CPU).
        gradient_checkpointing=args.gradient_checkpointing)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, reward_funcs=[reply_reward],
                          train_dataset=level_dataset(POOL, rows=args.steps, seed=args.seed),
                          environment_factory=environment_factory(POOL))
    started = time.perf_counter()
    trainer.train()
    minutes = (time.perf_counter() - started) / 60
    steps = [e for e in trainer.state.log_history if "reward" in e]
    rewards = [e["reward"] for e in steps]
    window = max(1, min(args.window, len(rewards) // 2))
    return {"model": Path(model_dir).name, "steps": len(rewards), "generations": args.generations,
            "reward_first": mean(rewards[:window]), "reward_last": mean(rewards[-window:]), "window": window,
            "rewards": [round(r, 3) for r in rewards],
            "reply_reward": [round(e.get("rewards/reply_reward/mean", 0.0), 3) for e in steps],
            "game_reward": [round(e.get("rewards/SpadegymToolEnv/mean", 0.0), 3) for e in steps],
            "tool_calls": [round(e.get("tools/call_frequency", 0.0), 3) for e in steps],
            "minutes": round(minutes, 1)}


def _prepared_smollm2() -> str:
    from spadegym.train.models import prepare_model

    return str(prepare_model("smollm2", install=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a local model directory (default: SmolLM2-135M-Instruct, prepared)")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--generations", type=int, default=8, help="rollouts per step, one group")
    parser.add_argument("--max-completion-length", type=int, default=24)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--window", type=int, default=5, help="steps averaged at each end")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                        help="bf16 autocast (default: on a GPU only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="/tmp/spadegym-trl-learns")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    result = train(args)
    print(f"{result['model']}: {result['steps']} GRPO steps of {result['generations']} rollouts in "
          f"{result['minutes']} min; mean reward, first {result['window']} steps {result['reward_first']:.3f}, "
          f"last {result['window']} steps {result['reward_last']:.3f}")
    print(f"  per step: reward {result['rewards']}\n  tool calls per rollout {result['tool_calls']}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
