# Sourced by the GPU scripts: checks for an NVIDIA GPU, makes vLLM's own environment once (vLLM pins its own torch
# and transformers, so it cannot share the project's) and points spadegym's vLLM backend at it.
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || { echo "no NVIDIA GPU here"; exit 1; }
python -c "import torch; assert torch.cuda.is_available(), 'this torch sees no GPU'"

if [ ! -x .venv-vllm-gpu/bin/python ] || ! .venv-vllm-gpu/bin/python -c "import vllm" 2>/dev/null; then
  python -m venv .venv-vllm-gpu
  .venv-vllm-gpu/bin/python -m pip install -q --upgrade pip
  .venv-vllm-gpu/bin/pip install -q vllm
fi
export SPADEGYM_VLLM_PYTHON="$PWD/.venv-vllm-gpu/bin/python"
