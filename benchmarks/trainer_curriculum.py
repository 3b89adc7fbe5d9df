"""Does the live curriculum keep a TRL-trained model's levels in the learnable band?

    python benchmarks/trainer_curriculum.py --json

Two arms, each one ``accelerate launch`` of examples/trl_curriculum.py (GRPOTrainer, two processes, one
curriculum served by the main process), the same model, steps and seeds:

- ``curriculum``: examples/configs/curriculum.toml (the mutation designer, blend reward, half of each round
  replayed from the buffer by score);
- ``uniform``: the same, with ``designer = "uniform"`` and no replay: every round draws fresh levels uniformly
  from the families' listed levels (the non-adaptive baseline).

The figure is the share of played levels (one per level and round) whose no-hint win rate is in the learnable
band (``signals.bands.LEARNABLE``), over every round of the run.

The model: SmolLM2-135M writes no tool call and takes minutes a step on this shared 2-core CPU, so the default is
a one-layer model made here (``--model DIR`` takes any other): its only outputs are tool calls of ``act`` with one
of the actions the Mathematical Reasoning families list, sampled uniformly at first and trained by GRPO (the head
is all it has). It is a weak player whose win rate differs by level, which is what the band measures.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "trl_curriculum.py"
CONFIG = ROOT / "examples" / "configs" / "curriculum.toml"
#: The actions the Mathematical Reasoning families (button_lock, take_away, water_jugs) list at their listed levels.
ACTIONS = (
    [f"press {i}" for i in range(1, 6)]
    + [f"take {n} from pile {p}" for n in (1, 2, 3) for p in "xyz"]
    + [f"{verb} {j}" for verb in ("fill", "empty") for j in "abc"]
    + [f"pour {a} into {b}" for a in "abc" for b in "abc" if a != b]
)


def menu_model(out: Path) -> Path:
    """A one-layer Qwen2 whose every reply is one tool call ``act(action)``, the action uniform over ``ACTIONS``."""
    import torch
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    calls = ["\n" + json.dumps({"name": "act", "arguments": {"action": a}}) + "\n" for a in ACTIONS]
    core = Tokenizer(
        models.BPE(vocab={c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}, merges=[])
    )
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, padding_side="left")
    tokenizer.add_special_tokens(
        {
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
            "additional_special_tokens": ["<|im_start|>"],
        }
    )
    tokenizer.add_tokens(["<tool_call>", "</tool_call>", *calls])
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    vocab = len(tokenizer)
    hidden = (vocab + 7) // 8 * 8
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=vocab,
            hidden_size=hidden,
            intermediate_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            tie_word_embeddings=False,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )
    ids = tokenizer.convert_tokens_to_ids
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()  # the layer adds nothing: the head reads the current token
        layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(vocab, hidden))
        head = model.lm_head.weight
        head.zero_()
        head[ids("<tool_call>"), ids("Ċ")] = 50.0
        for (
            call
        ) in calls:  # every call equally likely after <tool_call>; then the call closes and the reply ends
            head[ids(call), ids("<tool_call>")] = 50.0
            head[ids("</tool_call>"), ids(call)] = 50.0
        head[tokenizer.eos_token_id, ids("</tool_call>")] = 50.0
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def arm_config(arm: str, out: Path) -> Path:
    """The shared config, on the Mathematical Reasoning families; the uniform arm without designer or replay."""
    text = CONFIG.read_text().replace(
        'skills = ["Mathematical Reasoning", "Logical Deduction"]', 'skills = ["Mathematical Reasoning"]'
    )
    if arm == "uniform":
        text = text.replace('designer = "mutation"', 'designer = "uniform"')
        text = text.replace("replay_fraction = 0.5", "replay_fraction = 0.0")
    path = out / f"{arm}.toml"
    path.write_text(text)
    return path


def band_share(run: Path) -> tuple[float, int]:
    """Share of (round, level) plays whose no-hint win rate is in the learnable band; and the rounds stored."""
    from spadegym.signals import bands
    from spadegym.store import RunStore

    wins: dict[tuple[int, str], list[bool]] = defaultdict(list)
    with RunStore.open(run) as store:
        rounds = len(store.rounds())
        for episode in store.episodes(split="train", hinted=False):
            wins[(episode["round"], episode["env_id"])].append(bool(episode["success"]))
    lo, hi = bands.LEARNABLE
    inside = [lo <= sum(w) / len(w) <= hi for w in wins.values()]
    return (sum(inside) / len(inside) if inside else 0.0), rounds


def launch(model: Path, config: Path, run: Path, steps: int, processes: int, tool_calls: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [
        str(Path(sys.executable).parent / "accelerate"),
        "launch",
        "--num_processes",
        str(processes),
        "--main_process_port",
        str(port),
        *(["--multi_gpu"] if processes > 1 else []),
        str(SCRIPT),
        str(model),
        "--config",
        str(config),
        "--out",
        str(run),
        "--max-steps",
        str(steps),
        "--tool-calls",
        str(tool_calls),
        "--completion-length",
        str(256 * tool_calls),  # an observation is a few hundred bytes, and the menu model's tokens are bytes
        "--lr",
        "0.05",
    ]
    env = {
        **os.environ,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the {config.stem} arm failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument(
        "--model", type=Path, help="a chat model directory (default: the one-layer menu model)"
    )
    parser.add_argument("--steps", type=int, default=8, help="GRPO steps per arm (a round is two steps)")
    parser.add_argument("--tool-calls", type=int, default=4, help="turns per rollout")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        model = args.model or menu_model(out / "model")
        shares, rounds = {}, {}
        for arm in ("curriculum", "uniform"):
            launch(model, arm_config(arm, out), out / arm, args.steps, args.processes, args.tool_calls)
            shares[arm], rounds[arm] = band_share(out / arm)
    result = {
        "band_share_curriculum": round(shares["curriculum"], 4),
        "band_share_uniform": round(shares["uniform"], 4),
        "processes": args.processes,
        "rounds": rounds["curriculum"],
        "rounds_uniform": rounds["uniform"],
        "steps": args.steps,
        "tool_calls": args.tool_calls,
        "model": str(args.model) if args.model else "one-layer menu model (CPU)",
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
