#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: vLLM in an environment of its own, then SmolLM2 sampled through vLLM and through
# transformers' generate (benchmarks/vllm_sampler.py), and a short self-play run through each
# (benchmarks/gpu/selfplay_vllm.py), and TRL's environment mode training SmolLM2 (benchmarks/trl_learns.py).
# Prints three JSON lines; record them in benchmarks/README.md.
#   bash benchmarks/gpu/run.sh          # from the repository root, in the virtual environment with spadegym[train]
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/vllm_env.sh

MODEL="$(spadegym models prepare smollm2)"
python benchmarks/vllm_sampler.py --model "$MODEL" --prompts 32 --repeat 8 --max-new-tokens 256 --json | tail -1
python benchmarks/gpu/selfplay_vllm.py --model "$MODEL" --rounds 3 --json | tail -1
python benchmarks/trl_learns.py --model "$MODEL" --json | tail -1
