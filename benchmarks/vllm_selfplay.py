"""Self-play with one model in both hf: roles sampled through a vLLM server, killed after a round and resumed.

The run trains SmolLM2-135M-Instruct (by default) with LoRA, the agent and the designer (edit mode) sharing the
weights, with ``train.generation = "vllm"`` on a server this script starts (the CPU build of vLLM on a machine without
a GPU; ``$SPADEGYM_VLLM_PYTHON`` or ``.venv-vllm``, which ``scripts/setup-tests`` makes). ``spadegym run`` is killed
(SIGKILL) once round 0 is in its store, then resumed with ``--resume`` to ``--rounds``. What it prints, one JSON line:

- ``is_logratio_max`` per round and role: the largest |log-prob| gap between the server's sampled tokens and the
  trainer's log-probs of the same tokens (the tokens trained are the ones the server returned: float32 on both
  sides gives about 1e-4; other tokens would give gaps of several nats);
- ``probe_moved``: the largest change of the server's log-probs on a fixed prompt between the base weights and the
  run's last checkpoint's adapter, loaded on the server after the run (the run pushed it after its updates);
- ``killed_after_round``, ``resumed_rounds``, ``updates`` and the wall seconds of each part.

    python benchmarks/vllm_selfplay.py --json                 # SmolLM2 on this machine (CPU: about 20 minutes)
    python benchmarks/vllm_selfplay.py --model tiny --json    # the tests' tiny model: a check that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spadegym.store import RunStore, StoreError
from spadegym.train.vllm_sampler import VLLMSampler
from spadegym.train.vllm_server import (
    PYTHON_VARIABLE,
    VLLMServer,
    free_port,
    server_command,
    server_environment,
    vllm_python,
)

LORA_RANK = 16
PROBE = [{"role": "user", "content": "Three doors: a, b and c. Which one do you open? Reply with \\boxed{a}."}]


def run_config(model: str, url: str, rounds: int, cpu: bool) -> dict[str, Any]:
    """examples/configs/grpo.toml's shape, smaller: a round in minutes on two cores."""
    return {
        "agent": f"hf:{model}", "designer": f"hf:{model}", "rounds": rounds, "seed": 0,
        "skills": ["Pattern Recognition"], "skills_per_round": 1, "envs_per_round": 2, "plays": 8, "hint_plays": 0,
        "group_size": 4, "rollout": {"max_turns": 4}, "llm_designer": {"mode": "edit", "edits_per_parent": 2},
        # Held-out play is measured at the end only, on one family: the script is about sampling and training.
        "heldout": {"every": 0, "suites": ["in_distribution"], "families": ["number_sequence"], "levels": "easiest",
                    "seeds": 2, "hint": False},
        "train": {"generation": "vllm", "vllm_urls": [url], "lora": True, "lora_r": LORA_RANK, "lr": 5e-4,
                  "temperature": 0.7, "max_new_tokens": 8, "reply_prefix": "\\boxed{", "system_prompt": "short",
                  "action_rule": "forgiving", "progress_reward": 1.0, "device": "cpu" if cpu else "auto",
                  **({"dtype": "float32"} if cpu else {})},
    }


def spadegym(*args: str, log: Path) -> subprocess.Popen:
    with open(log, "ab") as sink:
        return subprocess.Popen([sys.executable, "-m", "spadegym", *args], stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)


def last_round(out: Path) -> int | None:
    try:
        with RunStore.open(out) as store:
            return store.last_complete_round()
    except StoreError:  # not made yet, or its tables not written yet
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory, or 'tiny' (default: spadegym models prepare smollm2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="run directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    import torch
    from transformers import AutoTokenizer

    from spadegym.train.models import prepare_model
    from spadegym.train.tokens import ChatTokens

    if args.model == "tiny":
        from spadegym.train.tiny import save_tiny_model

        model = str(save_tiny_model(Path(tempfile.mkdtemp(prefix="tiny-")) / "model", vocab_size=1000,
                                    hidden_size=64))
    else:
        model = args.model or str(prepare_model("smollm2"))
    cpu = not torch.cuda.is_available()
    out = args.out or Path(tempfile.mkdtemp(prefix="vllm-selfplay-")) / "run"
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"{out.name}.log"

    side = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"  # scripts/setup-tests makes it
    if side.exists():
        os.environ.setdefault(PYTHON_VARIABLE, str(side))
    port = free_port()
    command = server_command(vllm_python(None), model, port, dtype="float32" if cpu else "bfloat16",
                             max_model_len=4096, seed=0, lora_rank=LORA_RANK, cpu=cpu, extra=[])
    started = time.perf_counter()
    server = VLLMServer(command, server_environment(threads=None, cpu=cpu), port).start(timeout_s=900)
    result: dict[str, Any] = {"model": Path(model).name, "device": "CPU" if cpu else torch.cuda.get_device_name(0),
                              "server_start_s": round(time.perf_counter() - started, 1)}
    chat = ChatTokens(AutoTokenizer.from_pretrained(model))
    probe = chat.prompt(PROBE) + chat.tokenizer.encode("\\boxed{b}", add_special_tokens=False)
    sampler = VLLMSampler([server.url], eos_id=chat.eos_id, temperature=1.0)
    try:
        base = sampler.prompt_logprobs(probe)
        config = out.parent / f"{out.name}.json"
        config.write_text(json.dumps(run_config(model, server.url, args.rounds, cpu)))

        t = time.perf_counter()
        first = spadegym("run", "--config", str(config), "--out", str(out), "--no-report", log=log)
        while first.poll() is None and last_round(out) is None:
            time.sleep(2)
        if first.poll() is not None:
            raise SystemExit(f"the run ended before its first round was stored; see {log}")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        result["killed_after_round"] = last_round(out)
        result["first_s"] = round(time.perf_counter() - t, 1)

        t = time.perf_counter()
        # The server's URL is a safety setting, never taken from a store: the resume names it again.
        resumed = spadegym("run", "--resume", str(out), "--rounds", str(args.rounds), "--no-report",
                           "--set", f"train.vllm_urls=[\"{server.url}\"]", log=log)
        if resumed.wait() != 0:
            raise SystemExit(f"the resumed run failed; see {log}")
        result["resumed_s"] = round(time.perf_counter() - t, 1)

        # The run leaves the server on its base model; its last checkpoint's adapter is what training made.
        last = sorted((out / "checkpoints").glob("round-*"))[-1] / "weights"
        sampler.load_adapter(str(last))
        after = sampler.prompt_logprobs(probe)
        result["probe_moved"] = round(max(abs(a - b) for a, b in zip(base, after)), 4)
    finally:
        sampler.close()
        server.stop()

    with RunStore.open(out) as store:
        rounds = store.rounds()
    result["rounds"] = len(rounds)
    result["resumed_rounds"] = [r["round"] for r in rounds if r["round"] > (result["killed_after_round"] or 0)]
    result["is_logratio_max"] = {
        str(r["round"]): {role: round(r["learner"][f"{role}_is_logratio_max"], 5) for role in ("agent", "designer")
                          if isinstance(r["learner"].get(f"{role}_is_logratio_max"), (int, float))}
        for r in rounds}
    result["updates"] = max((r["learner"].get("agent_updates") or 0) for r in rounds)
    result["run_dir"] = str(out)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
