"""Sandbox speed: pipelined steps/s against the bare IPC limit, and worker start times.

    python benchmarks/sandbox.py [--json] [--seconds S]

Figures, in one run:
- framework_steps_per_s: 8 trivial environments stepped in lock-step through
  ``EnvHandle.submit`` + ``gather`` (hardened workers, the real protocol);
- echo_steps_per_s: the same pattern against 8 bare JSON echo processes over
  the same kind of pipes (what inter-process messaging alone allows);
- ratio: framework / echo (aim: >= 0.8);
- zygote_start_ms: median time from asking for a new hardened worker to its
  first reply; fresh_start_ms: the same for a fresh ``python -c`` echo worker;
  layer_start_ms: zygote start with the layers added one tier at a time;
- inprocess_calls_per_s: ``step`` called directly in this process (reference).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time

from spadegym.envfile.loader import instantiate, load_env_class
from spadegym.sandbox import Sandbox, SandboxConfig, gather, probe

N_ENVS = 8

TRIVIAL = '''
class CounterEnv:
    def reset(self, seed=None):
        self.n = 0
        return "start", {}

    def step(self, action):
        self.n += 1
        return f"count {self.n}", 0.0, False, False, {}
'''

# The bare IPC limit: read a JSON line, answer with a reply of the same shape as a step's.
ECHO_WORKER = r'''
import json, os, sys
rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
buf = b""
n = 0
while True:
    while b"\n" not in buf:
        chunk = os.read(rfd, 65536)
        if not chunk:
            sys.exit(0)
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    req = json.loads(line)
    n += 1
    reply = {"id": req["id"], "ok": True, "value": {"observation": f"count {n}", "reward": 0.0,
             "terminated": False, "truncated": False, "info": {}}, "output": "", "seconds": 0.0}
    os.write(wfd, (json.dumps(reply, separators=(",", ":")) + "\n").encode())
'''


class EchoWorker:
    """A fresh interpreter running ECHO_WORKER over two pipes."""

    def __init__(self) -> None:
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ECHO_WORKER, str(to_r), str(from_w)], pass_fds=[to_r, from_w],
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL,
        )
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.rid = 0

    def send(self) -> None:
        self.rid += 1
        msg = {"id": self.rid, "op": "step", "action": "a", "want": []}
        os.write(self.to_w, (json.dumps(msg, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        os.close(self.to_w)
        os.close(self.from_r)
        self.proc.wait()


def echo_gather(workers: list[EchoWorker]) -> None:
    waiting = {w.from_r: w for w in workers}
    while waiting:
        for w in list(waiting.values()):
            if b"\n" in w.buf:
                line, w.buf = w.buf.split(b"\n", 1)
                if json.loads(line)["id"] != w.rid:
                    raise RuntimeError("echo worker out of step")
                del waiting[w.from_r]
        if not waiting:
            break
        ready, _, _ = select.select(list(waiting), [], [], 5.0)
        for fd in ready:
            waiting[fd].buf += os.read(fd, 65536)


def rate(step_once, seconds: float) -> float:
    """Steps per second of ``step_once`` (which does N_ENVS steps), over about ``seconds``."""
    for _ in range(50):
        step_once()  # warm up
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(100):
            step_once()
        done += 100 * N_ENVS
    return done / elapsed


def framework_rate(seconds: float) -> float:
    with Sandbox() as box:
        envs = [box.open(TRIVIAL, "counter.py") for _ in range(N_ENVS)]
        for env in envs:
            assert env.reset(seed=0).ok

        def step_once() -> None:
            outcomes = gather([env.submit("step", action="a", want=[]) for env in envs])
            if not all(o.ok for o in outcomes):
                raise RuntimeError(outcomes)

        return rate(step_once, seconds)


def echo_rate(seconds: float) -> float:
    workers = [EchoWorker() for _ in range(N_ENVS)]
    try:
        def step_once() -> None:
            for w in workers:
                w.send()
            echo_gather(workers)

        return rate(step_once, seconds)
    finally:
        for w in workers:
            w.close()


def zygote_start_ms(config: SandboxConfig, repeats: int) -> float:
    """Median ms from spawning a worker to its first reply (the zygote already warm)."""
    times = []
    with Sandbox(config) as box:
        for i in range(repeats + 3):
            start = time.perf_counter()
            worker = box.spawn()
            outcome = gather([worker.send("ping", 10.0)])[0]
            took = time.perf_counter() - start
            worker.kill()
            box._workers.discard(worker)
            if not outcome.ok:
                raise RuntimeError(outcome)
            if i >= 3:
                times.append(took * 1000)
    return statistics.median(times)


def fresh_start_ms(repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        w = EchoWorker()
        w.send()
        echo_gather([w])
        times.append((time.perf_counter() - start) * 1000)
        w.close()
    return statistics.median(times)


def inprocess_rate(seconds: float) -> float:
    env = instantiate(load_env_class(TRIVIAL, "counter.py"))
    env.reset(seed=0)
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(1000):
            env.step("a")
        done += 1000
    return done / elapsed


def layer_start_ms(repeats: int) -> dict[str, float]:
    """Zygote start with the layers added tier by tier (cumulative)."""
    steps = {
        "process": {"seccomp": False, "landlock": False, "namespaces": False},
        "seccomp": {"seccomp": True, "landlock": False, "namespaces": False},
        "landlock": {"seccomp": True, "landlock": True, "namespaces": False},
        "namespaces": {"seccomp": True, "landlock": True, "namespaces": True},
    }
    return {tier: round(zygote_start_ms(SandboxConfig(**flags), repeats), 3) for tier, flags in steps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per throughput figure")
    parser.add_argument("--starts", type=int, default=30, help="worker starts per start-time figure")
    args = parser.parse_args()

    framework = framework_rate(args.seconds)
    echo = echo_rate(args.seconds)
    figures = {
        "tier": probe().tier,
        "framework_steps_per_s": round(framework),
        "echo_steps_per_s": round(echo),
        "ratio": round(framework / echo, 3),
        "zygote_start_ms": round(zygote_start_ms(SandboxConfig(), args.starts), 3),
        "fresh_start_ms": round(fresh_start_ms(args.starts), 3),
        "layer_start_ms": layer_start_ms(args.starts),
        "inprocess_calls_per_s": round(inprocess_rate(args.seconds)),
        "envs": N_ENVS,
        "cpus": os.cpu_count(),
    }
    figures["start_speedup"] = round(figures["fresh_start_ms"] / figures["zygote_start_ms"], 2)
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
