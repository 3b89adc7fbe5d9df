"""LLM rollout throughput: real episodes through ``run_episodes`` against a fake server with fixed latency.

    python benchmarks/llm_rollout.py [--json] [--concurrency 64] [--latency 0.2] [--turns 8] [--rounds 8]
                                     [--server process|thread] [--bare]

The ideal is ``concurrency / latency`` requests per second (every slot always
waiting on the server); the ratio achieved/ideal is what the client, the agent
and the runner cost on top. The default measures 512 episodes, one default
self-play round (16 environments x 32 plays): the first requests leave
together and the last episodes drain alone, and a short window mostly
measures that ramp (0.89 with 192 episodes, 0.95 with 512 on the same
machine). The fake server runs in its own process by default,
as a real model server does; ``--server thread`` runs it in this process, where
its threads compete with the client for the GIL. ``--bare`` also measures bare
``LLMClient.chat`` calls (no agent, no runner, no sandbox).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

from spadegym.agents.openai_agent import OpenAIAgent, OpenAIAgentConfig
from spadegym.level import Level
from spadegym.llm import EndpointConfig, LLMClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # spadegym_testing: the doubles beside the package
from spadegym.rollout import HandlePool, Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

# A small env that never ends early, so every episode plays exactly --turns turns.
CORRIDOR = '''
class CorridorEnv:
    def reset(self, seed=None):
        self.pos = 0
        return "A long corridor. Walk: answer \\\\boxed{forward}.", {}

    def step(self, action):
        self.pos += action.strip() == "forward"
        return f"You are {self.pos} steps in.", 0.0, False, False, {}
'''


def _serve(latency: float, queue: Any) -> None:
    server = FakeOpenAIServer(default=FakeReply(content="I walk \\boxed{forward}", delay_s=latency)).start()
    queue.put(server.url)
    server._thread.join()


class ServerProcess:
    """The fake server in a child process (stopped on exit)."""

    def __init__(self, latency: float):
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        self.process = ctx.Process(target=_serve, args=(latency, queue), daemon=True)
        self.process.start()
        self.url = queue.get(timeout=60)

    def cpu_seconds(self) -> float:
        """CPU time the server process has used (Linux /proc; 0 elsewhere)."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(5)


def endpoint(url: str, concurrency: int) -> EndpointConfig:
    return EndpointConfig(model="fake-model", base_url=url, concurrency=concurrency, retries=0, timeout_s=30)


async def bare(url: str, concurrency: int, rounds: int) -> dict[str, float]:
    client = LLMClient(endpoint(url, concurrency))
    messages = [{"role": "user", "content": "go"}]
    await asyncio.gather(*(client.chat(messages) for _ in range(concurrency)))  # open the connections
    n = concurrency * rounds * 4
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client.chat(messages) for _ in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.aclose()
    return {"requests": n, "requests_per_s": n / wall, "cpu_ms_per_request": 1000 * cpu / n}


async def rollout(url: str, concurrency: int, turns: int, rounds: int) -> dict[str, float]:
    agent = OpenAIAgent(endpoint(url, concurrency), OpenAIAgentConfig(stop_on_unavailable=True))
    envs = {"corridor": Level(CORRIDOR)}
    config = RolloutConfig(max_turns=turns, concurrency=concurrency)
    with Sandbox() as sandbox:
        # Warm up outside the measurement: workers forked and loaded (kept in the pool), connections opened.
        handles = HandlePool(sandbox)
        await run_episodes(sandbox, envs, [Play("corridor", i) for i in range(concurrency)], agent,
                           RolloutConfig(max_turns=1, concurrency=concurrency), handles=handles)
        plays = [Play("corridor", i) for i in range(concurrency * rounds)]
        t0, c0 = time.perf_counter(), time.process_time()
        episodes = await run_episodes(sandbox, envs, plays, agent, config, handles=handles)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        handles.close()
    await agent.aclose()
    failures = sum(ep.failure is not None for ep in episodes)
    n = sum(len(ep.turns) for ep in episodes)
    return {"requests": n, "requests_per_s": n / wall, "cpu_ms_per_request": 1000 * cpu / n,
            "episodes": len(episodes), "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="Server latency per request, seconds.")
    parser.add_argument("--turns", type=int, default=8, help="Turns per episode.")
    parser.add_argument("--rounds", type=int, default=8,
                        help="Episodes = rounds x concurrency (8 x 64 = 512, one default self-play round).")
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--bare", action="store_true", help="Also measure bare LLMClient.chat calls.")
    parser.add_argument("--no-gc-freeze", action="store_true", help="Skip gc.freeze() (the CLI freezes after imports).")
    args = parser.parse_args()
    if not args.no_gc_freeze:
        gc.freeze()

    if args.server == "process":
        server: Any = ServerProcess(args.latency)
    else:
        server = FakeOpenAIServer(default=FakeReply(content="I walk \\boxed{forward}", delay_s=args.latency)).start()
    try:
        ideal = args.concurrency / args.latency
        result: dict[str, Any] = {"concurrency": args.concurrency, "latency_s": args.latency,
                                  "server": args.server, "ideal_per_s": ideal,
                                  "load_average": os.getloadavg()[0], "cpus": os.cpu_count(),
                                  "gc_freeze": not args.no_gc_freeze}
        if args.bare:
            b = asyncio.run(bare(server.url, args.concurrency, args.rounds))
            result.update({"bare_requests_per_s": b["requests_per_s"], "bare_ratio": b["requests_per_s"] / ideal,
                           "bare_cpu_ms_per_request": b["cpu_ms_per_request"]})
        server_cpu = server.cpu_seconds() if args.server == "process" else 0.0
        r = asyncio.run(rollout(server.url, args.concurrency, args.turns, args.rounds))
        if args.server == "process":  # warm-up requests included: a slight overestimate
            result["server_cpu_ms_per_request"] = 1000 * (server.cpu_seconds() - server_cpu) / r["requests"]
        result.update({"requests_per_s": r["requests_per_s"], "ratio": r["requests_per_s"] / ideal,
                       "cpu_ms_per_request": r["cpu_ms_per_request"], "requests": r["requests"],
                       "episodes": r["episodes"], "failures": r["failures"]})
    finally:
        server.stop()
    if args.json:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}))
        return
    print(f"concurrency {args.concurrency}, latency {args.latency}s, server in a {args.server}: "
          f"ideal {ideal:.0f} requests/s (load average {result['load_average']:.1f} on {result['cpus']} CPUs)")
    if args.bare:
        print(f"  bare client  {result['bare_requests_per_s']:7.1f} requests/s  ratio {result['bare_ratio']:.2f}  "
              f"({result['bare_cpu_ms_per_request']:.2f} ms CPU per request)")
    print(f"  rollout      {result['requests_per_s']:7.1f} requests/s  ratio {result['ratio']:.2f}  "
          f"({result['cpu_ms_per_request']:.2f} ms CPU per request, {result['episodes']} episodes, "
          f"{result['failures']} failures)")
    if "server_cpu_ms_per_request" in result:
        print(f"  fake server  {result['server_cpu_ms_per_request']:.2f} ms CPU per request")


if __name__ == "__main__":
    main()
