#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: vLLM in an environment of its own, then SmolLM2 sampled through vLLM and through
# transformers' generate (benchmarks/vllm_sampler.py), and a short self-play run through each
# (benchmarks/gpu/selfplay_vllm.py). Prints two JSON lines; record them in benchmarks/README.md.
#   bash benchmarks/gpu/run.sh          # from the repository root, in the virtual environment with spadegym[train]
set -euo pipefail
cd "$(dirname "$0")/../.."

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || { echo "no NVIDIA GPU here"; exit 1; }
python -c "import torch; assert torch.cuda.is_available(), 'this torch sees no GPU'"

# vLLM pins its own torch and transformers: it gets an environment of its own, made once and reused.
if [ ! -x .venv-vllm-gpu/bin/python ] || ! .venv-vllm-gpu/bin/python -c "import vllm" 2>/dev/null; then
  python -m venv .venv-vllm-gpu
  .venv-vllm-gpu/bin/python -m pip install -q --upgrade pip
  .venv-vllm-gpu/bin/pip install -q vllm
fi
export SPADEGYM_VLLM_PYTHON="$PWD/.venv-vllm-gpu/bin/python"

MODEL="$(spadegym models prepare smollm2)"
python benchmarks/vllm_sampler.py --model "$MODEL" --prompts 32 --repeat 8 --max-new-tokens 256 --json | tail -1
python benchmarks/gpu/selfplay_vllm.py --model "$MODEL" --rounds 3 --json | tail -1
