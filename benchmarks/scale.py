"""Scaling out on Ray: episodes/s and validations/s with 1, 2, 4 ... sandbox actors on this machine.

    python benchmarks/scale.py [--actors 1 2 4] [--plays 24] [--validations 8] [--agent random] [--json]

Figures, in one process:
- local: the same work on the local executor (one sandbox in this process), the baseline;
- episodes_per_s[N]: the built-in families' environments (one per family, at
  level 0) played ``--plays`` times each, 64 at a time, with N actors hosting
  the environments (the agent acts in the driver, in the same batches as locally);
- efficiency[N] = rate with N actors / (N x rate with 1 actor) (1.0: linear);
- validations_per_s[N], validation_efficiency[N]: the gate on ``--validations``
  rendered files, one per actor at a time;
- driver_ms_per_episode: the driver's own CPU time per episode with the most
  actors (agent, episode bookkeeping, Ray calls); actor_ms_per_episode: the CPU
  time of the actors' process trees (actor, zygote, workers) per episode; and
  actors_per_driver = actor_ms / driver_ms: how many actors, each busy on a
  core of its own, one driver can keep fed. Both are CPU times, so a loaded
  machine slows them less than the rates.

Every actor gets ``ray.cpus_per_actor`` = 1 of a local cluster sized to the
largest N; on a machine with fewer cores than actors the actors share them,
and efficiency falls for that reason alone. ``--json`` prints one JSON object
as the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from spadegym.agents import make_agent
from spadegym.executor import LocalExecutor, RayConfig, make_executor
from spadegym.families import list_families, new_environment
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, run_episodes


def workload(plays: int, validations: int) -> tuple[dict[str, Level], list[Play], list[Level]]:
    families = list_families()
    envs = {}
    for family in families:
        _family, _knobs, source = new_environment(family.name, 0)
        envs[family.name] = Level(source)
    play_list = [Play(name, seed) for name in envs for seed in range(plays)]
    jobs = []
    for i in range(validations):
        family = families[i % len(families)]
        _f, _k, source = new_environment(family.name, min(1 + i // len(families), family.max_level), seed=i)
        jobs.append(Level(source))
    return envs, play_list, jobs


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int, children: bool = False) -> float:
    """CPU seconds of a process (with its reaped children), from /proc; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / _TICK


def actors_cpu_s(executor) -> float:
    """CPU seconds the actors' process trees used so far: actor, zygote (with reaped workers), live workers."""
    import ray

    if not hasattr(executor, "actors"):
        return 0.0
    total = 0.0
    for info in ray.get([a.processes.remote() for a in executor.actors]):
        total += _cpu_s(info["actor"]) + (_cpu_s(info["zygote"], children=True) if info["zygote"] else 0.0)
        total += sum(_cpu_s(w) for w in info["workers"])
    return total


def measure(executor, envs, plays, jobs, agent_spec: str) -> dict[str, float]:
    """Episodes/s, validations/s, and the driver's and the actors' CPU seconds per episode on one executor."""
    agent = make_agent(agent_spec, seed=0)
    rollout = RolloutConfig(concurrency=64)
    asyncio.run(run_episodes(executor.host, envs, plays[:len(envs)], agent, rollout))  # warm: zygotes, imports
    actors_cpu = actors_cpu_s(executor)
    wall, cpu = time.perf_counter(), time.process_time()
    episodes = asyncio.run(run_episodes(executor.host, envs, plays, agent, rollout))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    actors_cpu = actors_cpu_s(executor) - actors_cpu
    assert not [e for e in episodes if e.failure], "every benchmark episode must end cleanly"
    start = time.perf_counter()
    verdicts = executor.validate(jobs, None)
    validate_s = time.perf_counter() - start
    assert all(v.valid for v in verdicts), "every benchmark file must pass the gate"
    return {"episodes_per_s": len(episodes) / wall, "validations_per_s": len(jobs) / validate_s,
            "driver_ms_per_episode": 1000 * cpu / len(episodes), "actor_ms_per_episode": 1000 * actors_cpu / len(episodes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--plays", type=int, default=24, help="Plays per environment (one environment per family).")
    parser.add_argument("--validations", type=int, default=8, help="Files validated per measurement.")
    parser.add_argument("--agent", default="random", help="Agent spec acting in the driver (random, learner).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import ray

    ray.init(num_cpus=max(args.actors), include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    envs, plays, jobs = workload(args.plays, args.validations)
    print(f"{len(envs)} environments x {args.plays} plays = {len(plays)} episodes, {len(jobs)} validations; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, agent {args.agent}")
    with LocalExecutor() as local:
        base = measure(local, envs, plays, jobs, args.agent)
    print(f"local      {base['episodes_per_s']:8.1f} episodes/s  {base['validations_per_s']:6.2f} validations/s  "
          f"driver {base['driver_ms_per_episode']:.2f} ms CPU/episode")
    results = {}
    for n in args.actors:
        with make_executor("ray", ray=RayConfig(actors=n, cpus_per_actor=1)) as executor:
            results[n] = measure(executor, envs, plays, jobs, args.agent)
        r = results[n]
        print(f"{n} actor{'s' if n > 1 else ' '}   {r['episodes_per_s']:8.1f} episodes/s  "
              f"{r['validations_per_s']:6.2f} validations/s  driver {r['driver_ms_per_episode']:.2f} ms CPU/episode  "
              f"actors {r['actor_ms_per_episode']:.2f} ms CPU/episode")
    ray.shutdown()

    one = results[args.actors[0]] if args.actors[0] == 1 else None
    def efficiency(key: str) -> dict[str, float]:
        return {str(n): round(r[key] / (n * one[key]), 3) for n, r in results.items() if n > 1} if one else {}

    most = results[max(args.actors)]
    actors_per_driver = most["actor_ms_per_episode"] / most["driver_ms_per_episode"]
    summary = {
        "episodes_per_s": {str(n): round(r["episodes_per_s"], 1) for n, r in results.items()},
        "efficiency": efficiency("episodes_per_s"),
        "validations_per_s": {str(n): round(r["validations_per_s"], 2) for n, r in results.items()},
        "validation_efficiency": efficiency("validations_per_s"),
        "local_episodes_per_s": round(base["episodes_per_s"], 1),
        "local_validations_per_s": round(base["validations_per_s"], 2),
        "ray_vs_local_1_actor": round(results[1]["episodes_per_s"] / base["episodes_per_s"], 3) if one else None,
        "driver_ms_per_episode": round(most["driver_ms_per_episode"], 3),
        "actor_ms_per_episode": round(most["actor_ms_per_episode"], 3),
        "actors_per_driver": round(actors_per_driver, 1),
        "agent": args.agent, "cpus": os.cpu_count(),
    }
    print(f"efficiency vs linear: episodes {summary['efficiency']}, validations {summary['validation_efficiency']}; "
          f"one driver feeds ~{summary['actors_per_driver']} actors (actor CPU / driver CPU per episode)")
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
