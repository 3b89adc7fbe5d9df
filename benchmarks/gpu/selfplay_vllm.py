"""A short self-play run with one model in both roles, sampled through vLLM and through transformers' generate.

Each run trains the same model (SmolLM2-135M-Instruct by default) with LoRA for
``--rounds`` rounds, the agent and the designer sharing the weights; the only
difference is ``train.generation``. Tokens per second are the tokens both
roles sampled over the seconds of the rounds' design and play phases (the
phases that sample); the vLLM run also reports the sampler-trainer mismatch
its importance sampling corrected (mean and largest per-token |log-ratio|, the
mean truncated weight), averaged over its updates. One JSON line.

    python benchmarks/gpu/selfplay_vllm.py --json          # on a GPU machine (benchmarks/gpu/run.sh sets it up)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from spadegym.loop.config import validate_config
from spadegym.loop.run import run
from spadegym.train.models import prepare_model


def config(model: str, generation: str, rounds: int) -> Any:
    return validate_config({
        "agent": f"hf:{model}", "designer": f"hf:{model}", "rounds": rounds, "seed": 0,
        "skills_per_round": 2, "envs_per_round": 4, "plays": 16, "hint_plays": 4, "group_size": 8,
        "heldout": {"every": 0},
        # The trainer shares the card with the server here: the server takes a third of its memory.
        "train": {"generation": generation, "vllm_args": ["--gpu-memory-utilization", "0.3"], "lora": True, "max_new_tokens": 64, "designer_max_new_tokens": 256,
                  "action_rule": "forgiving", "system_prompt": "short"},
        "tensorboard": False})


def measure(model: str, generation: str, rounds: int) -> dict[str, Any]:
    started = time.perf_counter()
    result = run(config(model, generation, rounds), out=Path(tempfile.mkdtemp(prefix=f"selfplay-{generation}-")) / "run",
                 report=False)
    wall = time.perf_counter() - started
    summaries = [s.to_dict() for s in result.summaries]
    sampling_s = sum((s.get("timings") or {}).get("design", 0) + (s.get("timings") or {}).get("play", 0)
                     for s in summaries)
    tokens = max((s["learner"].get("tokens_sampled_total") or 0) for s in summaries)
    out = {"tokens": tokens, "sampling_s": round(sampling_s, 1), "wall_s": round(wall, 1),
           "tokens_per_s": round(tokens / sampling_s, 1) if sampling_s else None}
    for key in ("is_logratio_mean", "is_logratio_max", "is_weight_mean", "is_truncated"):
        values = [s["learner"][f"{role}_{key}"] for s in summaries for role in ("agent", "designer")
                  if isinstance(s["learner"].get(f"{role}_{key}"), (int, float))]
        if values:
            out[key] = round(max(values) if key.endswith("max") else sum(values) / len(values), 5)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: spadegym models prepare smollm2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    model = args.model or str(prepare_model("smollm2"))
    import torch

    device = torch.cuda.get_device_name(0) + " (GPU)" if torch.cuda.is_available() else "CPU"
    vllm = measure(model, "vllm", args.rounds)
    local = measure(model, "transformers", args.rounds)
    result = {"model": Path(model).name, "device": device, "rounds": args.rounds,
              "tokens_per_s_vllm": vllm["tokens_per_s"], "tokens_per_s_inprocess": local["tokens_per_s"],
              "ratio": round(vllm["tokens_per_s"] / local["tokens_per_s"], 2)
              if vllm["tokens_per_s"] and local["tokens_per_s"] else None,
              "vllm": vllm, "inprocess": local}
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
