"""GRPO on a real small model, offline: does training in the self-play loop raise held-out success?

SmolLM2-135M-Instruct (``spadegym models prepare smollm2``; any local HF model
directory with --model) in three parts:

1. agent: held-out success (instances of the chosen families' easiest levels,
   on seeds training never draws) before training; a self-play run of the real
   loop (mutation designer over the chosen skill, the model as the ``hf:``
   agent, one GRPO step through TRL per round); held-out success after, on the
   same instances. Reports GRPO steps, minutes, tokens/s, peak memory.
2. overhead: one batch of episodes, trained once by the agent's ``update``
   (matching episodes to their token sequences, advantages, batching, TRL's
   loss, the optimizer step, the KL probe) and once by plain TRL on the same
   tensors (``compute_loss``, backward, optimizer step): the ratio of the two.
3. designer: a short run with the model in both roles (shared weights); the
   valid-proposal rate of the first and the last round.

The levers for a 135M model (base success near zero with the stock prompt):
the ``short`` system prompt (answer with the boxed action only, one worked
example), the reply prefix ``\\boxed{`` (given, not sampled: the model only
writes the action), the ``forgiving`` action rule (a box holding part of one
valid action, or a reply naming a valid action, counts), short replies, a
sampling temperature of 0.7 (at 1.0 most replies are not valid actions, and
an invalid action only costs a turn, so episodes run to the level's 8 turns
and prompts grow), and level 0 of
``number_sequence`` (name the next two terms of a sequence from five listed
numbers, one mistake allowed): every seed is a new puzzle, and no favourite
action wins it: the answer has to be read from the observation (on
``motif_fill`` level 0, six distinct rows, the model collapsed onto one
action). For the update: groups of 4 plays of one instance, 4 instances a
round; the family's partial rewards (a right term earns, a wrong one costs) join
the return GRPO sees (``progress_reward``: with success alone a group whose
plays all lose has no signal), each episode's tokens averaged in the loss
(``loss_type = "grpo"``: a losing episode plays more turns, and with TRL's
token-level default its end-of-turn tokens were pushed down until replies ran
on past the action), a LoRA adapter at lr 5e-4, no gradient checkpointing on
the CPU, and half of each round's levels drawn from renders of the held-out
level beside the mutation designer (``--pool-share``). Held-out success before
and after is measured on the same instances (32 seeds by default); the rise is
printed with its 95% interval, as two proportions and paired by instance
(with McNemar's exact p).

    python benchmarks/llm_grpo.py                     # the default budget (see benchmarks/README.md for its time)
    python benchmarks/llm_grpo.py --rounds 2 --heldout-seeds 4 --designer-rounds 1   # a smoke run
    python benchmarks/llm_grpo.py --json              # last line: one JSON object
    python benchmarks/llm_grpo.py --skip overhead,designer --rounds 20 --heldout-seeds 256   # the documented rise
    python benchmarks/llm_grpo.py --skip train,overhead,designer --heldout-seeds 256   # the held-out evaluation alone
    python benchmarks/llm_grpo.py --device cuda --rounds 40 --plays 16 --heldout-seeds 32
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from spadegym.agents.hf import HFAgent
from spadegym.families import get_family
from spadegym.level import Level
from spadegym.loop.config import validate_config
from spadegym.loop.heldout import build_suite, evaluate
from spadegym.loop.run import run
from spadegym.rollout import Play, RolloutConfig, derive_seed, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.store import RunStore
from spadegym.train import Policy, TrainConfig
from spadegym.train.models import prepare_model


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def heldout_success(model: str, train: TrainConfig, families: list[str], seeds: int, seed: int,
                    rollout: RolloutConfig) -> tuple[float, dict[str, Any]]:
    """Held-out success of the untrained model, exactly as the loop measures it at the end of a run."""
    policy = Policy.from_path(model, train, seed=seed)
    agent = HFAgent(policy, train)
    with Sandbox() as box, agent.evaluating(seed):
        result, episodes = asyncio.run(evaluate(agent, box, build_suite("easiest", families), seeds=seeds,
                                                seed=seed, hint=False, rollout=rollout))
    tokens = sum(e.tokens.get("completion", 0) for e in episodes)
    outcomes = {(e.env_id, e.seed): bool(e.success) for e in episodes if e.scored}
    del policy, agent
    gc.collect()
    return result["heldout_success"], {"episodes": len(episodes), "completion_tokens": tokens}, outcomes


def level_zero_pool(directory: Path, family: str, count: int, seed: int) -> Path:
    """``count`` renders of a family's level 0 (the held-out suite's level), as a pool source's directory."""
    from spadegym.families import new_environment

    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        _, _, source = new_environment(family, "0", {}, seed + i)
        (directory / f"{family}_{i:03d}.py").write_text(source, encoding="utf-8")
    return directory


def agent_run(args: argparse.Namespace, model: str, train: TrainConfig, out: Path) -> dict[str, Any]:
    skill = get_family(args.families[0]).skill
    # Beside the designer, a pool of the held-out level's renders (--pool-share): training keeps meeting the
    # level that is measured while the mutation designer's levels move away from it.
    sources = [{"source": str(level_zero_pool(out.parent / "agent-pool", args.families[0], args.rounds * args.envs,
                                                    args.seed)),
                "share": args.pool_share}] if args.pool_share > 0 else []
    config = validate_config({
        "agent": f"hf:{model}", "designer": "mutation", "sources": sources, "rounds": args.rounds, "seed": args.seed,
        "skills": [skill], "skills_per_round": 1, "envs_per_round": args.envs, "plays": args.plays,
        "hint_plays": args.hint_plays, "group_size": args.group_size or args.plays,
        "heldout": {"every": 0, "levels": "easiest", "families": args.families, "seeds": args.heldout_seeds,
                    "hint": False, "seed": args.heldout_seed},
        "rollout": {"max_turns": args.max_turns}, "train": train.model_dump(),
        "mutation": {"families": args.families},
    })
    started = time.perf_counter()
    result = run(config, out=out, console=Console(quiet=not args.verbose), report=True)
    seconds = time.perf_counter() - started
    summaries = [s.to_dict() for s in result.summaries]
    with RunStore.open(out) as store:  # the final held-out episodes, to pair with "before" by instance
        last = store.episodes(split="heldout", round=len(summaries) - 1)
    outcomes = {(e["env_id"], e["seed"]): bool(e["success"]) for e in last if e.get("failure") is None}
    sampled = sum(s["learner"].get("agent_tokens_trained", 0) + s["learner"].get("agent_tokens_masked", 0)
                  for s in summaries)
    return {"after": summaries[-1].get("heldout_success"), "steps": sum(
        1 for s in summaries if "agent_updates" in s["learner"]), "seconds": seconds,
        "tokens": sampled, "win_rate": [s.get("win_rate") for s in summaries],
        "kl": [s["learner"].get("agent_kl_sampling") for s in summaries],
        "trained_reward": [s["learner"].get("agent_reward") for s in summaries], "outcomes": outcomes,
        "report": str(result.report) if result.report else None}


def rise_interval(before: float, after: float, n: int) -> dict[str, Any]:
    """The rise in success and its 95% interval (two independent proportions of n episodes each)."""
    se = math.sqrt(before * (1 - before) / n + after * (1 - after) / n)
    rise = after - before
    return {"rise": round(rise, 4), "rise_ci95": [round(rise - 1.96 * se, 4), round(rise + 1.96 * se, 4)]}


def paired_rise(before: dict[Any, bool], after: dict[Any, bool]) -> dict[str, Any]:
    """The rise over the instances measured both times, with its paired 95% interval and McNemar's exact p.

    Before and after play the same held-out instances, so the instance's own difficulty cancels in the
    per-instance difference; only the instances that changed outcome (won after and not before, or the
    reverse) carry evidence, and McNemar's two-sided exact test asks whether the two kinds are equally likely.
    """
    both = sorted(set(before) & set(after))
    if not both:
        return {}
    diffs = [int(after[k]) - int(before[k]) for k in both]
    n = len(diffs)
    mean = sum(diffs) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n) if n > 1 else float("nan")
    gained, lost = diffs.count(1), diffs.count(-1)
    tail = sum(math.comb(gained + lost, k) for k in range(min(gained, lost) + 1)) / 2 ** (gained + lost)
    return {"paired_instances": n, "paired_rise": round(mean, 4),
            "paired_rise_ci95": [round(mean - 1.96 * se, 4), round(mean + 1.96 * se, 4)],
            "instances_gained": gained, "instances_lost": lost, "mcnemar_p": float(f"{min(1.0, 2 * tail):.3g}")}


def step_overhead(args: argparse.Namespace, model: str, train: TrainConfig) -> dict[str, float]:
    """The agent's update against plain TRL (loss, backward, optimizer step) on the same batch."""
    import torch

    policy = Policy.from_path(model, train, seed=args.seed)
    agent = HFAgent(policy, train)
    family = get_family(args.families[0])
    spec = Level(family.render(family.level_knobs(0)))
    plays = [Play("probe", derive_seed(args.seed, "overhead", g), group=g) for g in range(args.envs)
             for _ in range(args.plays)]
    with Sandbox() as box:
        episodes = asyncio.run(run_episodes(box, {"probe": spec}, plays, agent,
                                            RolloutConfig(max_turns=args.max_turns)))
    finished = dict(agent._finished)
    samples = agent.samples(episodes)
    if all(s.advantage == 0 for s in samples):  # no spread in this batch: time the step with unit advantages
        for i, s in enumerate(samples):
            s.advantage = 1.0 if i % 2 else -1.0
    order = sorted(range(len(samples)), key=lambda i: len(samples[i].trace))
    micro = policy._micro_batches([len(samples[i].trace) for i in order], order)  # as the update groups them

    def plain_trl() -> float:
        batches = [policy.batch([samples[i] for i in idx]) for idx in micro]
        total = sum(float((b["completion_mask"] * b["tool_mask"]).sum()) for b in batches)
        started = time.perf_counter()
        trainer = policy.trainer
        trainer.current_gradient_accumulation_steps = trainer.args.steps_per_generation = len(batches)
        for b in batches:
            b["num_items_in_batch"] = torch.tensor(total)
            loss = trainer.compute_loss(policy.model, b)
            trainer.accelerator.backward(loss)
        trainer.accelerator.clip_grad_norm_(policy.model.parameters(), train.max_grad_norm)
        policy.optimizer.step()
        policy.optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - started

    def ours() -> float:
        agent._finished = dict(finished)
        started = time.perf_counter()
        agent.update(episodes)
        return time.perf_counter() - started

    plain = [plain_trl()]
    mine = ours()
    plain.append(plain_trl())
    base = sum(plain) / len(plain)
    return {"spadegym_step_s": round(mine, 3), "trl_step_s": round(base, 3), "ratio": round(mine / base, 3),
            "sequences": len(samples), "tokens": sum(len(s.trace) for s in samples)}


def designer_run(args: argparse.Namespace, model: str, train: TrainConfig, out: Path) -> dict[str, Any]:
    """Both roles on shared weights in one run: the model designs half of each round's levels, and a pool
    of the first family's level-0 renders (a source beside the designer) fills the other half, so the agent
    has levels to train on even while the designer writes no valid file."""
    pool = level_zero_pool(out / "pool", args.families[0], args.designer_rounds * args.designer_proposals, args.seed)
    skill = get_family(args.families[0]).skill
    config = validate_config({
        "agent": f"hf:{model}", "designer": f"hf:{model}", "rounds": args.designer_rounds, "seed": args.seed,
        "skills": [skill], "skills_per_round": 1, "envs_per_round": 2 * args.designer_proposals,
        "sources": [{"source": str(pool), "share": 0.5}], "plays": 4, "hint_plays": 2,
        "group_size": 4, "heldout": {"every": 0, "levels": "easiest", "families": args.families[:1], "seeds": 1,
                                     "hint": False},
        "rollout": {"max_turns": args.max_turns},
        "train": {**train.model_dump(), "designer_max_new_tokens": args.designer_tokens},
    })
    started = time.perf_counter()
    result = run(config, out=out / "run", console=Console(quiet=not args.verbose), report=True)
    summaries = [s.to_dict() for s in result.summaries]
    learner = [s["learner"] for s in summaries]
    # The valid-proposal rate is the designer's own: the pool's files are valid by construction.
    rates = [x.get("designer_valid_rate") for x in learner]
    return {"valid_rate_first": rates[0], "valid_rate_last": rates[-1], "valid_rates": rates,
            "designer_updates": sum(1 for x in learner if "designer_updates" in x),
            "agent_updates": sum(1 for x in learner if "agent_updates" in x),
            "rounds_both_roles_updated": sum(1 for x in learner if "designer_updates" in x and "agent_updates" in x),
            "gate_progress": [x.get("designer_gate_progress") for x in learner],
            "report": str(result.report) if result.report else None,
            "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model directory (default: spadegym models prepare smollm2)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--families", default="number_sequence",
                        help="comma-separated; training levels come from these families, held-out = their level 0")
    parser.add_argument("--rounds", type=int, default=5, help="self-play rounds of the agent run (GRPO steps)")
    parser.add_argument("--envs", type=int, default=2, help="environments per round")
    parser.add_argument("--plays", type=int, default=8, help="plays per environment (one GRPO group)")
    parser.add_argument("--group-size", type=int, default=4,
                        help="plays per GRPO group (one instance each; default: all plays of an environment)")
    parser.add_argument("--hint-plays", type=int, default=0, help="hinted plays per environment (measure regret)")
    parser.add_argument("--heldout-seeds", type=int, default=32)
    parser.add_argument("--heldout-seed", type=int, default=4242)
    parser.add_argument("--max-turns", type=int, default=8,
                        help="turn budget of an environment that declares none (the built-in families declare theirs)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="weights dtype (auto: bfloat16 on a GPU, float32 on the CPU)")
    parser.add_argument("--generation-batch", type=int, default=16, help="sequences generated in one batch")
    parser.add_argument("--max-new-tokens", type=int, default=8, help="tokens per reply after the given '\\boxed{'")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch CPU threads (on a machine busy with other work 1 can be faster)")
    parser.add_argument("--micro-batch-tokens", type=int, default=1024,
                        help="padded tokens per forward/backward pass (memory: 4,096 peaked at 12 GB resident)")
    parser.add_argument("--lr", type=float, default=5e-4,
                        help="LoRA learning rate (2e-4 barely moved the policy in 5 steps; 1e-3 once broke the replies)")
    parser.add_argument("--loss-type", default="grpo",
                        help="TRL's loss aggregation: grpo (each episode's tokens averaged, so a long episode's "
                             "format tokens do not outweigh a short one's) or the library default dapo")
    parser.add_argument("--lora", action=argparse.BooleanOptionalAction, default=True, help="train a LoRA adapter")
    parser.add_argument("--temperature", type=float, default=0.7,
                        help="sampling temperature (1.0 makes a 135M model write mostly invalid actions)")
    parser.add_argument("--progress-reward", type=float, default=1.0,
                        help="weight of the family's partial rewards in the return GRPO sees (train.progress_reward)")
    parser.add_argument("--designer-rounds", type=int, default=2)
    parser.add_argument("--designer-proposals", type=int, default=4)
    parser.add_argument("--designer-tokens", type=int, default=384)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: agent, overhead, designer; "
                                                   "train: the agent part's training run (held-out before only)")
    parser.add_argument("--cache-mb", type=int, default=TrainConfig().cache_mb,
                        help="train.cache_mb: keys and values kept between an episode's turns (0: every turn encoded whole)")
    parser.add_argument("--pool-share", type=float, default=0.5,
                        help="share of each round's levels drawn from renders of the held-out level, beside the designer")
    parser.add_argument("--success-before",
                        help="held-out success before training, measured earlier with the same settings (skips measuring it): "
                             "a rate, or the heldout_before.json an earlier invocation wrote (then the rise is paired)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="directory for the runs (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--verbose", action="store_true", help="show the loop's round lines")
    args = parser.parse_args()
    args.families = [f.strip() for f in args.families.split(",") if f.strip()]
    skip = set(args.skip.split(","))
    console = Console(stderr=args.json)
    started = time.perf_counter()
    model = args.model or str(prepare_model("smollm2"))
    train = TrainConfig(system_prompt="short", action_rule="forgiving", reply_prefix="\\boxed{",
                        max_new_tokens=args.max_new_tokens, lr=args.lr, device=args.device, micro_batch=8, generation_batch=args.generation_batch,
                        micro_batch_tokens=args.micro_batch_tokens,
                        max_seq_len=4096, threads=args.threads, temperature=args.temperature, lora=args.lora,
                        progress_reward=args.progress_reward, gradient_checkpointing=args.device == "cuda",
                        loss_type=args.loss_type, cache_mb=args.cache_mb, dtype=args.dtype)
    out = Path(args.out or tempfile.mkdtemp(prefix="llm-grpo-"))
    rollout = RolloutConfig(max_turns=args.max_turns)
    figures: dict[str, Any] = {"model": Path(model).name, "device": args.device, "families": args.families}

    if "agent" not in skip:
        if args.success_before is None:
            console.print(f"held-out before: {args.heldout_seeds} seeds x {args.families} level 0 ...")
            t, cpu = time.perf_counter(), time.process_time()
            before, info, before_outcomes = heldout_success(model, train, args.families, args.heldout_seeds, args.heldout_seed,
                                           rollout)
            seconds, cpu = time.perf_counter() - t, time.process_time() - cpu  # CPU: what the load does not move
            figures.update(success_before=before, heldout_seconds=round(seconds, 1), heldout_cpu_seconds=round(cpu, 1),
                           **{f"heldout_{k}": v for k, v in info.items()},
                           heldout_seconds_per_episode=round(seconds / info["episodes"], 2),
                           heldout_cpu_seconds_per_episode=round(cpu / info["episodes"], 2))
            out.mkdir(parents=True, exist_ok=True)
            (out / "heldout_before.json").write_text(json.dumps([[*k, v] for k, v in before_outcomes.items()]))
            console.print(f"  success before: {before:.3f}  ({time.perf_counter() - t:.0f}s)")
        elif args.success_before.endswith(".json"):  # the outcomes an earlier invocation wrote, paired by instance
            before_outcomes = {(e, seed): v for e, seed, v in json.loads(Path(args.success_before).read_text())}
            figures.update(success_before=sum(before_outcomes.values()) / len(before_outcomes),
                           success_before_given=args.success_before)
        else:
            before_outcomes = {}
            figures.update(success_before=float(args.success_before), success_before_given=True)
        if "train" not in skip:  # skipped: the held-out evaluation of the untrained model alone
            console.print(f"self-play run: {args.rounds} rounds x {args.envs} envs x {args.plays} plays -> {out / 'agent'}")
            agent = agent_run(args, model, train, out / "agent")
            figures.update(success_after=agent["after"], steps=agent["steps"], seconds=round(agent["seconds"], 1),
                           minutes=round(agent["seconds"] / 60, 2), tokens=agent["tokens"],
                           tokens_per_s=round(agent["tokens"] / agent["seconds"], 2), train_win_rate=agent["win_rate"],
                           kl=agent["kl"], trained_reward=agent["trained_reward"], report=agent["report"])
            n = args.heldout_seeds * len(args.families)
            if agent["after"] is not None:
                figures.update(heldout_episodes_each=n, **rise_interval(figures["success_before"], agent["after"], n))
                console.print(f"  rise {figures['rise']:+.3f}, 95% interval [{figures['rise_ci95'][0]:+.3f}, "
                              f"{figures['rise_ci95'][1]:+.3f}] ({n} held-out episodes before and after)")
                paired = paired_rise(before_outcomes, agent["outcomes"])
                figures.update(paired)
                if paired:
                    console.print(f"  paired over {paired['paired_instances']} instances: rise {paired['paired_rise']:+.3f}, "
                                  f"95% interval [{paired['paired_rise_ci95'][0]:+.3f}, {paired['paired_rise_ci95'][1]:+.3f}], "
                                  f"{paired['instances_gained']} won only after, {paired['instances_lost']} only before, "
                                  f"McNemar p = {paired['mcnemar_p']:.3g}")
            console.print(f"  success after: {agent['after']:.3f}  steps {agent['steps']}  "
                          f"{agent['seconds'] / 60:.1f} min  win rate per round {agent['win_rate']}")
    if "overhead" not in skip:
        console.print("step time against plain TRL on one batch ...")
        overhead = step_overhead(args, model, train)
        figures.update(step_time_ratio_vs_trl=overhead["ratio"], step=overhead)
        console.print(f"  spadegym {overhead['spadegym_step_s']:.2f}s vs TRL {overhead['trl_step_s']:.2f}s "
                      f"(ratio {overhead['ratio']:.2f}) on {overhead['sequences']} sequences")
    if "designer" not in skip:
        console.print(f"designer: {args.designer_rounds} rounds x {args.designer_proposals} proposals, both roles ...")
        designer = designer_run(args, model, train, out / "designer")
        figures.update(designer=designer)
        console.print(f"  valid-proposal rate first {designer['valid_rate_first']} last {designer['valid_rate_last']}")
    figures.update(peak_memory_mb=round(peak_rss_mb(), 1), total_seconds=round(time.perf_counter() - started, 1))
    if args.json:
        print(json.dumps(figures))
    else:
        console.print_json(json.dumps(figures))


if __name__ == "__main__":
    main()
