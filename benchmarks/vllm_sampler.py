"""Sampling through a vLLM server against sampling in the training process, on one model, prompts and lengths.

The ``hf:`` roles sample either with transformers' ``generate`` in the training
process (``train.generation = "transformers"``) or through vLLM's
OpenAI-compatible server (``"vllm"``). This starts a vLLM server for the model
(SmolLM2-135M-Instruct by default; ``--model tiny`` for the tests' model with
heads vLLM's CPU build serves), samples ``--prompts`` chat prompts, each
``--repeat`` times (a GRPO group), up to ``--max-new-tokens`` tokens, through
both, and prints the tokens per second of each and their ratio. Then it scores
the server's samples with the trainer's own forward pass: ``logratio_mean`` and
``logratio_max`` are the mean and largest per-token |log p_trainer - log
p_server|, the mismatch that truncated importance sampling corrects.

Figures are wall seconds of sampling only (the server's start is ``start_s``),
after one warm-up call each: the server's work happens in another process.
On a GPU both sample in bfloat16 and share the card (the server takes
``--gpu-memory-utilization``); on the CPU in float32 unless ``--dtype``.

    python benchmarks/vllm_sampler.py --json            # needs SPADEGYM_VLLM_PYTHON (or vLLM here)
    python benchmarks/vllm_sampler.py --model tiny      # the tests' model, in a minute or two
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from spadegym.train import Policy, Sample, Trace, TrainConfig
from spadegym.train.models import prepare_model
from spadegym.train.vllm_sampler import VLLMSampler
from spadegym.train.vllm_server import VLLMServer, free_port, server_command, server_environment, vllm_python

TASKS = ["sequence: 2, 4, 6, ? Valid actions: say 7, say 8, say 9.",
         "You stand in a maze. Valid actions: north, south, east, west.",
         "Guess the number between 1 and 100. Valid actions: guess N.",
         "Three doors: a, b and c. One hides a prize. Valid actions: a, b, c."]


def prompts(policy: Policy, count: int) -> list[list[int]]:
    system = "You are playing a text-based game. Think briefly, then answer with one action inside \\boxed{}."
    return [policy.chat.prompt([{"role": "system", "content": system},
                                {"role": "user", "content": f"Game {i}. {TASKS[i % len(TASKS)]}"}])
            for i in range(count)]


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"{torch.cuda.get_device_name(0)} (GPU)"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores (CPU)"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    if args.model == "tiny":
        from spadegym.train.tiny import save_tiny_model

        model = str(save_tiny_model(Path(tempfile.mkdtemp(prefix="tiny-")) / "model", vocab_size=1000, hidden_size=64))
    else:
        model = args.model or str(prepare_model("smollm2"))
    device = "cuda" if torch.cuda.is_available() and args.device != "cpu" else "cpu"
    dtype = args.dtype or ("bfloat16" if device == "cuda" else "float32")
    config = TrainConfig(device=device, dtype=dtype, threads=args.threads, temperature=1.0,
                         generation_batch=args.prompts * args.repeat)
    policy = Policy.from_path(model, config, seed=0)
    rows = [p for p in prompts(policy, args.prompts) for _ in range(args.repeat)]

    extra = ["--gpu-memory-utilization", str(args.gpu_memory)] if device == "cuda" else []
    port = free_port()
    command = server_command(vllm_python(args.vllm_python), model, port, dtype=dtype, max_model_len=2048, seed=0,
                             lora_rank=None, cpu=device == "cpu", extra=extra)
    env = server_environment(args.threads)
    if device == "cpu":
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    server = VLLMServer(command, env, port)
    started = time.perf_counter()
    server.start(timeout_s=900)
    start_s = time.perf_counter() - started
    sampler = VLLMSampler([server.url], eos_id=policy.chat.eos_id, temperature=1.0, seeded=device != "cpu")
    try:
        sampler.generate(rows[:2], 4, [0, 1])  # warm-up
        t = time.perf_counter()
        served = sampler.generate(rows, args.max_new_tokens, list(range(len(rows))))
        vllm_s = time.perf_counter() - t
    finally:
        sampler.close()
        server.stop()

    policy.generate(rows[:2], 4)  # warm-up
    t = time.perf_counter()
    local = policy.generate(rows, args.max_new_tokens)
    local_s = time.perf_counter() - t

    # The trainer's log-probabilities of the server's samples: the mismatch importance sampling corrects.
    diffs: list[float] = []
    for start in range(0, len(rows), 8):
        samples = []
        for prompt, (ids, logprobs) in zip(rows[start:start + 8], served[start:start + 8]):
            trace = Trace(list(prompt))
            trace.add_sampled(ids, logprobs)
            samples.append(Sample(trace, 0.0, "agent"))
        batch = policy.batch(samples)
        with torch.no_grad():
            mine = policy.logprobs_of(batch)
        for i, (_, logprobs) in enumerate(served[start:start + 8]):
            diffs += [abs(a - b) for a, b in zip(mine[i, :len(logprobs)].tolist(), logprobs)]

    tokens_vllm = sum(len(ids) for ids, _ in served)
    tokens_local = sum(len(ids) for ids, _ in local)
    per_s_vllm, per_s_local = tokens_vllm / vllm_s, tokens_local / local_s
    return {"model": Path(model).name, "device": device_name(device), "dtype": dtype, "sequences": len(rows),
            "max_new_tokens": args.max_new_tokens, "tokens_vllm": tokens_vllm, "tokens_inprocess": tokens_local,
            "seconds_vllm": round(vllm_s, 3), "seconds_inprocess": round(local_s, 3), "start_s": round(start_s, 1),
            "tokens_per_s_vllm": round(per_s_vllm, 1), "tokens_per_s_inprocess": round(per_s_local, 1),
            "ratio": round(per_s_vllm / per_s_local, 2),
            "logratio_mean": round(sum(diffs) / max(len(diffs), 1), 5), "logratio_max": round(max(diffs, default=0.0), 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory, or 'tiny' (default: spadegym models prepare smollm2)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=4, help="samples per prompt (a GRPO group)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--device", choices=["auto", "cpu"], default="auto")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"])
    parser.add_argument("--threads", type=int, help="torch threads here and OMP threads in the server")
    parser.add_argument("--gpu-memory", type=float, default=0.3, help="the server's share of the GPU's memory")
    parser.add_argument("--vllm-python", help="Python with vLLM (default: $SPADEGYM_VLLM_PYTHON, else this one)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    result = measure(args)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>24}  {value}")


if __name__ == "__main__":
    main()
