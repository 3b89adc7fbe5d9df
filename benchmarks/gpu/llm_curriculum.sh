#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: SPADE's comparison with a language-model agent (benchmarks/llm_curriculum.py),
# SmolLM2-135M trained by GRPO in every arm, sampled through vLLM, on every family and held-out suite, several seeds.
# Each finished (arm, seed) is appended to the results file, so a run cut short resumes where it stopped.
#   bash benchmarks/gpu/llm_curriculum.sh [RESULTS.jsonl] [SEEDS]     # from the repository root
# Prints one JSON line; record it in benchmarks/README.md and the README's results table.
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/vllm_env.sh

RESULTS="${1:-llm_curriculum_gpu.jsonl}"
SEEDS="${2:-3}"
MODEL="$(spadegym models prepare smollm2)"
python benchmarks/llm_curriculum.py --model "$MODEL" --device cuda --dtype bfloat16 --generation vllm \
  --arms adaptive,adaptive_edit,fixed_levels,fixed_llm,rlve --seeds "$SEEDS" \
  --rounds 20 --envs 4 --plays 8 --hint-plays 4 --heldout-seeds 8 --max-new-tokens 16 \
  --results "$RESULTS" --json | tail -1
