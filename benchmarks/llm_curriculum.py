"""SPADE's comparison with a language-model agent: the adaptive curriculum against fixed pools, on held-out suites.

Every arm is one self-play run of the real loop with the same ``hf:`` agent trained
by GRPO (LoRA), the same rounds, environments per round and plays per environment
(so the same number of training episodes), paired by run seed; only what the agent
trains on differs:

  adaptive        the mutation designer, the deployed blend reward (the paper's curriculum)
  adaptive_edit   the same model as the designer in edit mode (both roles on shared weights)
  fixed_levels    a fixed pool: every training family at every listed level (``fixed:all``)
  fixed_llm       a fixed pool of environments a designer wrote once before training, frozen
                  (``--llm-pool``; default: the shipped example pool, examples/pool)
  rlve            reasoning-gym tasks as adaptive verifiable environments, each task's difficulty
                  stepped up by the agent's accuracy (``spadegym.designers.rlve``, RLVE's rule)

After training the agent is scored without the hint on suites no arm trains on:
frontier, edge_cases and unseen_families (``spadegym.loop.heldout``), reasoning_gym
(tasks held out of every arm, ``HELDOUT_TASKS``) and tool_use (each tool-use family's
level 0; the agent answers in the games format, so this suite measures transfer to a
setting it never saw, not the paper's BFCL figure). Every arm of a seed plays the same
held-out instances (``--heldout-seed``).

Figures: success per suite and arm with each arm's paired 95% interval against the
best fixed arm of that suite (``benchmarks/paired.py``), the adaptive arm over the best
fixed arm (``ratio_by_suite``), sampled tokens, wall and CPU seconds per arm.

    python benchmarks/llm_curriculum.py --json --seeds 3                        # SmolLM2, every arm
    python benchmarks/llm_curriculum.py --arms adaptive,fixed_levels --rounds 4 --results study.jsonl
    python benchmarks/llm_curriculum.py --model DIR --device cuda --generation vllm   # benchmarks/gpu/llm_curriculum.sh

``--results FILE`` appends each finished (arm, seed) run as one JSON line and reuses
those already there (the same settings only): a study runs in pieces and resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared statistics module beside it
from paired import paired  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RLVE = "spadegym.designers.rlve:RLVEDesigner"
ARMS = ("adaptive", "adaptive_edit", "fixed_levels", "fixed_llm", "rlve")
DEFAULT_ARMS = ("adaptive", "fixed_levels", "fixed_llm", "rlve")
ADAPTIVE = ("adaptive", "adaptive_edit")
FIXED = ("fixed_levels", "fixed_llm")
#: reasoning-gym tasks no arm trains on (the rlve arm trains on ``rlve.TASKS``).
HELDOUT_TASKS = ("leg_counting", "gcd", "word_sorting")
LOOP_SUITES = ("frontier", "edge_cases", "unseen_families")
SUITES = (*LOOP_SUITES, "reasoning_gym", "tool_use")
HELDOUT_SEED = 4242


def heldout_folder(folder: Path, seed: int) -> Path:
    """The reasoning_gym and tool_use suites as environment files (``rg-*`` and ``tool-*``), one level each."""
    from spadegym.adapters.reasoning_gym_levels import render_level
    from spadegym.families import list_families

    folder.mkdir(parents=True, exist_ok=True)
    for task in HELDOUT_TASKS:
        (folder / f"rg-{task}.py").write_text(render_level(task, 0, instances=1000, seed=seed).source)
    for family in list_families():
        if getattr(family, "setting", "games") == "tool_use":
            (folder / f"tool-{family.name}.py").write_text(family.render(family.level_knobs(0)))
    return folder


def train_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The agent's GRPO settings (those of benchmarks/llm_grpo.py, which lift a 135M model off zero)."""
    return {"system_prompt": "short", "action_rule": "forgiving", "reply_prefix": "\\boxed{",
            "max_new_tokens": args.max_new_tokens, "lr": args.lr, "device": args.device, "lora": True,
            "temperature": 0.7, "progress_reward": 1.0, "loss_type": "grpo", "dtype": args.dtype,
            "generation": args.generation, "threads": args.threads, "micro_batch": 8, "max_seq_len": 4096,
            "gradient_checkpointing": args.device == "cuda", "designer_max_new_tokens": 128,
            # The trainer shares the card with the vLLM server: the server takes a third of its memory.
            **({"vllm_args": ["--gpu-memory-utilization", "0.3"]} if args.generation == "vllm" else {})}


def arm_config(arm: str, seed: int, args: argparse.Namespace, model: str, heldout: Path) -> dict[str, Any]:
    """One arm's run config: the shared budget and held-out settings, and the arm's own levels."""
    config: dict[str, Any] = {
        "agent": f"hf:{model}", "rounds": args.rounds, "seed": seed, "envs_per_round": args.envs,
        "plays": args.plays, "hint_plays": args.hint_plays, "group_size": args.plays,
        "skills_per_round": 1, "train": train_settings(args), "tensorboard": False,
        "heldout": {"suites": ["path", *LOOP_SUITES], "path": str(heldout), "every": 0, "hint": False,
                    "seeds": args.heldout_seeds, "seed": args.heldout_seed, "levels": "easiest",
                    **({"families": args.families, "unseen_families": args.unseen} if args.families else {})},
    }
    if args.families:  # a slow agent trains on the skills it is measured on (every arm draws from their families)
        from spadegym.families import get_family

        config["skills"] = list(dict.fromkeys(get_family(f).skill for f in args.families if f not in args.unseen))
    if arm == "adaptive":
        config.update(designer="mutation", designer_reward="blend")
    elif arm == "adaptive_edit":
        config.update(designer=f"hf:{model}", designer_reward="blend", llm_designer={"mode": "edit"})
    elif arm == "fixed_levels":
        config.update(designer="fixed:all")
    elif arm == "fixed_llm":
        config.update(designer="pool", pool={"path": str(args.llm_pool)})
    elif arm == "rlve":
        from spadegym.designers.rlve import RLVEDesigner

        config.update(designer=RLVE, skills=RLVEDesigner(seed=seed).task_skills())
    return config


def run_arm(arm: str, seed: int, args: argparse.Namespace, model: str, workdir: Path) -> dict[str, Any]:
    """Train one arm of one seed and score it on every held-out suite."""
    from spadegym.loop.config import validate_config
    from spadegym.loop.run import run

    heldout = heldout_folder(workdir / f"heldout-{seed}", args.heldout_seed)
    config = validate_config(arm_config(arm, seed, args, model, heldout))
    started, cpu = time.perf_counter(), time.process_time()
    result = run(config, out=workdir / f"{arm}-{seed}", console=Console(quiet=True), report=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    final = result.summaries[-1].to_dict()
    suites = {s: final["heldout_by_suite"].get(s) for s in LOOP_SUITES}
    files = final.get("heldout_by_family", {})  # the path suite (first: per file) holds both file suites
    for suite, prefix in (("reasoning_gym", "rg-"), ("tool_use", "tool-")):
        values = [v for name, v in files.items() if name.startswith(prefix)]
        suites[suite] = round(float(np.mean(values)), 4) if values else None
    learner = [s.to_dict()["learner"] for s in result.summaries]
    return {"arm": arm, "seed": seed, "suites": suites, "episodes": sum(s.episodes for s in result.summaries),
            "tokens": max((x.get("tokens_sampled_total") or 0 for x in learner), default=0),
            "agent_updates": sum(1 for x in learner if "agent_updates" in x),
            "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
            "load_average": round(os.getloadavg()[0], 1)}  # the machine's load as the run ended (shared CPUs)


def summarize(runs: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Per suite and arm: mean success, per seed, and the paired interval against the best fixed arm."""
    by = {(r["arm"], r["seed"]): r for r in runs}
    arms = list(dict.fromkeys(r["arm"] for r in runs))
    arms = [a for a in arms if all((a, s) in by for s in seeds)]  # an arm counts once every seed has run
    success = {a: {s: _mean([by[(a, x)]["suites"].get(s) for x in seeds]) for s in SUITES} for a in arms}
    per_seed = {a: {s: [by[(a, x)]["suites"].get(s) or 0.0 for x in seeds] for s in SUITES} for a in arms}
    fixed = [a for a in FIXED if a in arms]
    adaptive = next((a for a in ADAPTIVE if a in arms), None)
    best = {s: max(fixed, key=lambda a: success[a][s] or 0.0) for s in SUITES} if fixed else {}
    ci95, ratio = {}, {}
    for suite, base in best.items():
        ci95[suite] = {a: paired(per_seed[a][suite], per_seed[base][suite]) for a in arms if a != base}
        if adaptive is not None:
            top, bottom = success[adaptive][suite], success[base][suite]
            ratio[suite] = round(top / bottom, 4) if top is not None and bottom else None
    costs = {a: {"episodes": int(np.mean([by[(a, x)]["episodes"] for x in seeds])),
                 "tokens": int(np.mean([by[(a, x)]["tokens"] for x in seeds])),
                 "seconds": _mean([by[(a, x)]["seconds"] for x in seeds]),
                 "cpu_seconds": _mean([by[(a, x)]["cpu_seconds"] for x in seeds]),
                 "load_average": _mean([by[(a, x)].get("load_average") for x in seeds])} for a in arms}
    return {"success_by_arm_and_suite": success, "per_seed_by_arm_and_suite": per_seed, "adaptive_arm": adaptive,
            "best_fixed_by_suite": best, "ratio_by_suite": ratio, "ci95_by_suite": ci95, "cost_by_arm": costs}


def kept_runs(path: Path | None, study: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs a results file holds for these settings (a file of other settings is refused)."""
    if path is None or not path.is_file():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if lines and lines[0].get("study") != study:
        raise SystemExit(f"{path} holds runs of other settings ({lines[0].get('study')}); name a fresh --results file.")
    return [line for line in lines if "arm" in line]


def device_name(device: str) -> str:
    import platform

    if device == "cuda":
        import torch

        return f"{torch.cuda.get_device_name(0)} (GPU)"
    return f"{platform.processor() or platform.machine()} CPU"


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 4) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model directory (default: spadegym models prepare smollm2)")
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"comma-separated, of: {', '.join(ARMS)}")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=8, help="self-play rounds per arm (one GRPO step each)")
    parser.add_argument("--envs", type=int, default=2, help="environments per round")
    parser.add_argument("--plays", type=int, default=4, help="no-hint plays per environment (one GRPO group)")
    parser.add_argument("--hint-plays", type=int, default=2, help="hinted plays per environment (every arm)")
    parser.add_argument("--heldout-seeds", type=int, default=8, help="instances per held-out level")
    parser.add_argument("--heldout-seed", type=int, default=HELDOUT_SEED)
    parser.add_argument("--families", default="",
                        help="comma-separated: train and measure on these families only (a slow agent); empty: all")
    parser.add_argument("--unseen", default="", help="with --families: the ones held out as unseen_families")
    parser.add_argument("--llm-pool", type=Path, default=ROOT / "examples" / "pool",
                        help="the fixed_llm arm's environments, written once before training")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="weights dtype (auto: bfloat16 on a GPU, float32 on the CPU)")
    parser.add_argument("--generation", default="transformers", choices=["transformers", "vllm"],
                        help="the sampler (vllm: a vLLM server beside the trainer, on a GPU)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--results", type=Path, help="a JSONL file: each finished run is appended, kept runs reused")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    if unknown := [a for a in arms if a not in ARMS]:
        parser.error(f"unknown arm {unknown[0]!r}; arms: {', '.join(ARMS)}")
    args.families = [f for f in args.families.split(",") if f]
    args.unseen = [f for f in args.unseen.split(",") if f]
    if args.families and not args.unseen:
        parser.error("--families needs --unseen: the families among them held out as unseen_families")
    from spadegym.train.models import prepare_model

    model = args.model or str(prepare_model("smollm2"))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    study = {"model": Path(model).name, "rounds": args.rounds, "envs": args.envs, "plays": args.plays,
             "hint_plays": args.hint_plays, "heldout_seeds": args.heldout_seeds, "heldout_seed": args.heldout_seed,
             "families": args.families, "unseen": args.unseen, "llm_pool": str(args.llm_pool)}
    runs = kept_runs(args.results, study)
    if args.results and not runs and not (args.results.is_file() and args.results.read_text().strip()):
        args.results.write_text(json.dumps({"study": study}) + "\n")
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="spadegym-llm-curriculum-") as tmp:
        for seed in seeds:
            for arm in arms:
                if any(r["arm"] == arm and r["seed"] == seed for r in runs):
                    continue
                r = run_arm(arm, seed, args, model, Path(tmp))
                runs.append(r)
                if args.results:
                    with args.results.open("a") as f:
                        f.write(json.dumps(r) + "\n")
                console.print(f"{arm:13s} seed {seed}: " + " ".join(f"{s} {v}" for s, v in r["suites"].items())
                              + f"  {r['episodes']} episodes  {r['seconds']:.0f}s")
    out = {"model": Path(model).name, "device": device_name(args.device), "seeds": seeds, **study,
           **summarize([r for r in runs if r["arm"] in arms and r["seed"] in seeds], seeds)}
    if args.json:
        print(json.dumps(out))
        return 0
    for suite in SUITES:
        row = " ".join(f"{a} {v[suite]}" for a, v in out["success_by_arm_and_suite"].items())
        print(f"{suite}: {row}; adaptive / best fixed ({out['best_fixed_by_suite'].get(suite)}) = "
              f"{out['ratio_by_suite'].get(suite)}; paired against it: "
              + ", ".join(f"{a} {p['mean']:+.3f} {p.get('ci95')}" for a, p in out["ci95_by_suite"].get(suite, {}).items()))
    for arm, cost in out["cost_by_arm"].items():
        print(f"{arm}: {cost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
