"""How fast a local model plays: the loop's sampler against plain ``model.generate``, and against itself before prefix reuse.

Three measurements in one process, on one model (SmolLM2-135M-Instruct by
default, ``--model tiny`` for the two-layer model the tests build):

1. episodes: ``--episodes`` plays of a family's level 0 (the held-out suite's
   level, with the SmolLM2 study's settings: short prompt, reply prefix
   ``\\boxed{``, 8 new tokens, forgiving actions) through ``run_episodes`` with
   the ``hf:`` agent, once as the sampler plays now (each episode's keys and
   values kept between turns, beginnings shared by episodes encoded once) and
   once as it played before (every turn's whole conversation encoded,
   ``train.cache_mb = 0``), both greedy so that they play the same episodes
   (checked: ``same_episodes``); ``speedup_vs_previous`` is the ratio of their
   costs.
2. generate: the prompts the sampler was given, turn by turn in the batches it
   made, through plain ``model.generate`` (no loop, no sandbox, nothing kept
   between turns); ``ratio_vs_generate`` is its cost over the loop's
   (``ratio_vs_generate_previous``: over the sampler's before).
3. turns: a corridor that never ends early, played for each of ``--turns``
   turns: cost per episode and per turn for both samplers. Now a turn costs
   what its new tokens cost; before, it grew with the conversation.

Costs are CPU seconds of this process (the model runs here, on ``--threads``
threads): on a shared machine the load moves wall time, not CPU time. Wall
seconds are printed too (``*_wall``, ``seconds``, ``episodes_per_s``).

    python benchmarks/hf_rollout.py                    # SmolLM2 (spadegym models prepare smollm2)
    python benchmarks/hf_rollout.py --model tiny       # the tests' tiny model, under a minute
    python benchmarks/hf_rollout.py --json             # last line: one JSON object
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from spadegym.agents.hf import HFAgent
from spadegym.families import get_family
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, derive_seed, run_episodes
from spadegym.sandbox import Sandbox
from spadegym.train import Policy, TrainConfig
from spadegym.train.models import prepare_model

CORRIDOR = '''
class CorridorEnv:
    max_turns = {turns}

    def reset(self, seed=None):
        self.pos = 0
        return "A long corridor. Valid actions: forward, wait. Answer \\\\boxed{{forward}}.", {{}}

    def step(self, action):
        self.pos += action.strip() == "forward"
        return f"You are {{self.pos}} steps in. Valid actions: forward, wait.", 0.0, False, False, {{}}

    def valid_actions(self):
        return ["forward", "wait"]
'''


class Calls:
    """Every ``Policy.generate`` call of a run: its prompts and budget (replayed by the baselines), its time."""

    def __init__(self, policy: Policy):
        self.policy, self.calls, self.seconds = policy, [], 0.0

        self._generate = policy.generate

    def __call__(self, prompts: Any, max_new_tokens: int, **options: Any) -> Any:
        started = time.perf_counter()
        out = self._generate(prompts, max_new_tokens, **options)
        self.seconds += time.perf_counter() - started
        self.calls.append(([list(p) for p in prompts], max_new_tokens, [len(ids) for ids, _ in out]))
        return out


def play(policy: Policy, train: TrainConfig, envs: dict[str, Level], plays: list[Play], *, cache: bool,
         concurrency: int) -> dict[str, Any]:
    """The plays through the loop's runner with the hf agent (greedy); time, tokens, transcripts."""
    saved = policy.prefixes
    policy.prefixes = saved if cache else None
    calls = Calls(policy)
    policy.generate = calls  # type: ignore[method-assign]
    agent = HFAgent(policy, train)
    encoded = policy.work["encoded"]
    try:
        with Sandbox() as box, agent.evaluating(0, greedy=True):
            started, cpu = time.perf_counter(), time.process_time()
            episodes = asyncio.run(run_episodes(box, envs, plays, agent, RolloutConfig(concurrency=concurrency)))
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        del policy.generate
        policy.prefixes = saved
    sampled = sum(e.tokens.get("completion", 0) for e in episodes)
    return {"seconds": seconds, "cpu": cpu, "episodes": len(episodes), "turns": sum(len(e.turns) for e in episodes),
            "sampled": sampled, "encoded": policy.work["encoded"] - encoded, "sampler_seconds": calls.seconds,
            "failures": sum(e.failure is not None for e in episodes), "calls": calls.calls,
            "transcripts": [[t.reply for t in e.turns] for e in episodes]}


def replay_calls(policy: Policy, calls: list) -> tuple[float, float]:
    """The sampler's calls, prompt for prompt and batch for batch, through plain ``model.generate``;
    seconds and CPU seconds."""
    import torch

    model, pad = policy.model, policy.tokenizer.pad_token_id
    batch = policy.config.generation_batch
    model.eval()
    started, cpu = time.perf_counter(), time.process_time()
    with torch.no_grad():
        for prompts, max_new_tokens, _ in calls:
            order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
            for start in range(0, len(order), batch):
                chunk = order[start:start + batch]
                width = max(len(prompts[i]) for i in chunk)
                ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros_like(ids)
                for row, i in enumerate(chunk):
                    ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i])
                    mask[row, width - len(prompts[i]):] = 1
                model.generate(input_ids=ids.to(policy.device), attention_mask=mask.to(policy.device),
                               do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=pad,
                               eos_token_id=policy.chat.eos_id)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model directory, or 'tiny' (default: spadegym models prepare smollm2)")
    parser.add_argument("--family", default="number_sequence", help="the family whose level 0 is played")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=64, help="episodes in flight (the loop's default)")
    parser.add_argument("--generation-batch", type=int, default=16, help="rows per model.generate call")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--turns", default="2,4,8,16", help="corridor lengths of the turns part ('' skips it)")
    parser.add_argument("--turn-episodes", type=int, default=8, help="episodes per corridor length")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (on a busy machine 1 is often much faster)")
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    console = Console(stderr=args.json, soft_wrap=True)

    if args.model == "tiny":
        from spadegym.families import list_families
        from spadegym.train.tiny import save_tiny_model

        corpus = [f.render(f.level_knobs(0)) for f in list_families()]
        model = str(save_tiny_model(Path(tempfile.mkdtemp(prefix="tiny-")) / "model", corpus=corpus, vocab_size=1000))
        name = "tiny"
    else:
        model = args.model or str(prepare_model("smollm2"))
        name = Path(model).name
    train = TrainConfig(system_prompt="short", action_rule="forgiving", reply_prefix="\\boxed{", device="cpu",
                        max_new_tokens=args.max_new_tokens, generation_batch=args.generation_batch,
                        threads=args.threads, max_seq_len=8192)
    policy = Policy.from_path(model, train, seed=args.seed)
    console.print(f"{name}: {args.episodes} episodes of {args.family} level 0, greedy, "
                  f"batches of {args.generation_batch}, {args.threads} threads")

    family = get_family(args.family)
    spec = Level(family.render(family.level_knobs(0)))
    plays = [Play("level0", derive_seed(args.seed, "hf_rollout", i)) for i in range(args.episodes)]
    now = play(policy, train, {"level0": spec}, plays, cache=True, concurrency=args.concurrency)
    before = play(policy, train, {"level0": spec}, plays, cache=False, concurrency=args.concurrency)
    same = now["transcripts"] == before["transcripts"]
    generate_s, generate_cpu = replay_calls(policy, now["calls"])
    sampled = now["sampled"]
    # Ratios of CPU time: the model runs in this process on its threads, so the load of a shared machine
    # moves wall time, not this (the sandbox's workers, a small share of the loop, are other processes).
    figures: dict[str, Any] = {
        "model": name, "family": args.family, "episodes": args.episodes, "threads": args.threads,
        "generation_batch": args.generation_batch, "turns_per_episode": round(now["turns"] / args.episodes, 2),
        "same_episodes": same, "sampled_tokens": sampled,
        "episodes_per_s": round(args.episodes / now["seconds"], 3), "tokens_per_s": round(sampled / now["seconds"], 2),
        "episodes_per_cpu_s": round(args.episodes / now["cpu"], 3), "tokens_per_cpu_s": round(sampled / now["cpu"], 2),
        "encoded_tokens": now["encoded"], "encoded_tokens_previous": before["encoded"],
        "seconds": round(now["seconds"], 2), "seconds_previous": round(before["seconds"], 2),
        "cpu_seconds": round(now["cpu"], 2), "cpu_seconds_previous": round(before["cpu"], 2),
        "cpu_seconds_per_episode": round(now["cpu"] / args.episodes, 3),
        "cpu_seconds_per_episode_previous": round(before["cpu"] / args.episodes, 3),
        "speedup_vs_previous": round(before["cpu"] / now["cpu"], 2),
        "speedup_vs_previous_wall": round(before["seconds"] / now["seconds"], 2),
        "generate_cpu_seconds": round(generate_cpu, 2), "ratio_vs_generate": round(generate_cpu / now["cpu"], 3),
        "ratio_vs_generate_previous": round(generate_cpu / before["cpu"], 3),
        "ratio_vs_generate_wall": round(generate_s / now["seconds"], 3),
        "sampler_share_of_loop": round(now["sampler_seconds"] / now["seconds"], 3),
        "failures": now["failures"] + before["failures"], "load_average": os.getloadavg()[0],
    }
    console.print(f"  now      {now['cpu']:7.1f} CPU s ({now['seconds']:.1f}s)  {figures['episodes_per_cpu_s']:.2f} "
                  f"episodes per CPU s  {now['encoded']} tokens encoded")
    console.print(f"  before   {before['cpu']:7.1f} CPU s ({before['seconds']:.1f}s)  speedup "
                  f"{figures['speedup_vs_previous']:.2f}x  {before['encoded']} tokens encoded  same episodes: {same}")
    console.print(f"  generate {generate_cpu:7.1f} CPU s on the same prompts: ratio {figures['ratio_vs_generate']:.2f} "
                  f"(before: {figures['ratio_vs_generate_previous']:.2f})")

    lengths = [int(t) for t in args.turns.split(",") if t.strip()]
    if lengths:
        by_turns: dict[str, dict[str, float]] = {}
        for turns in lengths:
            corridor = {"corridor": Level(CORRIDOR.format(turns=turns))}
            walks = [Play("corridor", i) for i in range(args.turn_episodes)]
            row = {}
            for label, cache in (("now", True), ("previous", False)):
                r = play(policy, train, corridor, walks, cache=cache, concurrency=args.concurrency)
                row[f"cpu_seconds_per_episode_{label}"] = round(r["cpu"] / args.turn_episodes, 3)
                row[f"cpu_seconds_per_turn_{label}"] = round(r["cpu"] / r["turns"], 4)
                row[f"encoded_per_turn_{label}"] = round(r["encoded"] / r["turns"], 1)
            by_turns[str(turns)] = row
            console.print(f"  {turns:2d} turns: per turn {row['cpu_seconds_per_turn_now']:.3f} CPU s now, "
                          f"{row['cpu_seconds_per_turn_previous']:.3f} before; tokens encoded per turn "
                          f"{row['encoded_per_turn_now']:.0f} now, {row['encoded_per_turn_previous']:.0f} before")
        first, last = by_turns[str(lengths[0])], by_turns[str(lengths[-1])]
        figures.update(by_turns=by_turns, turn_cost_growth=round(
            last["cpu_seconds_per_turn_now"] / first["cpu_seconds_per_turn_now"], 2), turn_cost_growth_previous=round(
            last["cpu_seconds_per_turn_previous"] / first["cpu_seconds_per_turn_previous"], 2))
    if args.json:
        print(json.dumps(figures))
    else:
        console.print_json(json.dumps(figures))


if __name__ == "__main__":
    main()
