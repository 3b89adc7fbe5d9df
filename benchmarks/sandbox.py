"""Sandbox speed: pipelined steps/s against the bare IPC limit, and worker start times.

    python benchmarks/sandbox.py [--json] [--seconds S]

Figures, in one run:
- framework_steps_per_s: 8 trivial environments stepped in lock-step through
  ``EnvHandle.submit`` + ``gather`` (hardened workers, the real protocol);
- echo_steps_per_s: the same pattern against 8 bare JSON echo processes over
  the same kind of pipes (what inter-process messaging alone allows);
- ratio: framework / echo (aim: >= 0.8);
- zygote_start_ms: median time from asking the (warm) zygote for a new worker
  at the strongest tier to its first reply; fresh_start_ms: the same for a
  fresh ``python -c`` echo worker; layer_start_ms: zygote start with the layers
  added one tier at a time; layer_cost_ms: the time each layer takes to apply,
  measured inside a forked child (free of scheduling noise); exit_ms: from a
  forked child's last write to ``waitpid`` returning, bare and with the private
  scratch tmpfs, whose mount namespace the kernel tears down at exit (the host
  never waits for this: it kills a worker and moves on);
- inprocess_calls_per_s: ``step`` called directly in this process (reference);
- reply_check_us: the host's whole check of one typical step reply (envelope,
  strict schema, safe text; with an 8-action menu), and reply_check_vs_decode:
  that time over a plain ``json`` decode of the same line (what checking adds).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from spadegym.envfile.loader import instantiate, load_env_class
from spadegym.sandbox import Sandbox, SandboxConfig, gather, hardening, landlock, probe, schema, seccomp
from spadegym.sandbox import protocol as P

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
encode = json.JSONEncoder(separators=(",", ":")).encode
decode = json.JSONDecoder().decode
buf = b""
n = 0
while True:
    while b"\n" not in buf:
        chunk = os.read(rfd, 65536)
        if not chunk:
            sys.exit(0)
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    req = decode(line.decode())
    n += 1
    reply = {"id": req["id"], "ok": True, "value": {"observation": f"count {n}", "reward": 0.0,
             "terminated": False, "truncated": False, "info": {}}, "output": "", "seconds": 0.0}
    os.write(wfd, (encode(reply) + "\n").encode())
'''


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_DECODE = json.JSONDecoder().decode


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
        os.write(self.to_w, (_ENCODE(msg) + "\n").encode())

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
                if _DECODE(line.decode())["id"] != w.rid:
                    raise RuntimeError("echo worker out of step")
                del waiting[w.from_r]
        if not waiting:
            break
        ready, _, _ = select.select(list(waiting), [], [], 5.0)
        for fd in ready:
            waiting[fd].buf += os.read(fd, 65536)


def rate(step_once, seconds: float) -> float:
    """Steps per second of ``step_once`` (which does N_ENVS steps), over about ``seconds``."""
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            step_once()
        done += 50 * N_ENVS
    return done / elapsed


def throughput(seconds: float, rounds: int = 7) -> tuple[float, float]:
    """(framework, echo) steps/s: medians of alternating short rounds.

    Alternating keeps both figures under the same machine load (the CPUs are shared).
    """
    workers = [EchoWorker() for _ in range(N_ENVS)]
    with Sandbox() as box:
        envs = [box.open(TRIVIAL, "counter.py") for _ in range(N_ENVS)]
        for env in envs:
            assert env.reset(seed=0).ok

        def framework_once() -> None:
            outcomes = gather([env.submit("step", action="a", want=[]) for env in envs])
            if not all(o.ok for o in outcomes):
                raise RuntimeError(outcomes)

        def echo_once() -> None:
            for w in workers:
                w.send()
            echo_gather(workers)

        rate(framework_once, 0.2)  # warm up
        rate(echo_once, 0.2)
        framework, echo = [], []
        for _ in range(rounds):
            framework.append(rate(framework_once, seconds / rounds))
            echo.append(rate(echo_once, seconds / rounds))
    for w in workers:
        w.close()
    return statistics.median(framework), statistics.median(echo)


def start_ms(configs: dict[str, SandboxConfig], repeats: int) -> dict[str, float]:
    """Median ms from asking a warm zygote for a worker to its first reply, per config.

    The configs take turns, so machine load hits them alike.
    """
    boxes = {name: Sandbox(config) for name, config in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in configs}
    try:
        for i in range(repeats + 3):
            for name, box in boxes.items():
                start = time.perf_counter()
                worker = box.spawn()
                outcome = gather([worker.send("ping", 10.0)])[0]
                took = time.perf_counter() - start
                worker.kill()
                box._workers.discard(worker)
                if not outcome.ok:
                    raise RuntimeError(outcome)
                if i >= 3:  # the first spawns start the zygote
                    times[name].append(took * 1000)
    finally:
        for box in boxes.values():
            box.close()
    return {name: round(statistics.median(t), 3) for name, t in times.items()}


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


#: Layers added tier by tier (cumulative), to price each one at worker start.
LAYER_STEPS = {
    "process": {"seccomp": False, "landlock": False, "namespaces": False},
    "seccomp": {"seccomp": True, "landlock": False, "namespaces": False},
    "landlock": {"seccomp": True, "landlock": True, "namespaces": False},
    "namespaces": {"seccomp": True, "landlock": True, "namespaces": True},
}


def layer_costs_ms(repeats: int) -> dict[str, float]:
    """Median ms each layer takes to apply in a freshly forked child (no scheduling noise).

    The network namespace is entered once per zygote, not per worker.
    """
    hardening.prepare()
    abi, read_paths, keep_read = hardening._worker_plan()
    report = probe()
    samples: dict[str, list[float]] = {"process": [], "seccomp": [], "landlock": [], "uid": [], "netns": [],
                                       "tmpfs": []}
    for i in range(repeats):
        read_end, write_end = os.pipe()
        scratch = tempfile.mkdtemp(prefix="spadegym-bench-")
        os.chmod(scratch, 0o711)
        pid = os.fork()
        if pid == 0:  # the child applies each layer the machine has, timing each
            took = {}
            try:
                if report.layers["tmpfs"]:  # first, as in confine: the tmpfs becomes the cwd
                    t = time.perf_counter()
                    hardening.mount_private_scratch(scratch, SandboxConfig().scratch_mb, hardening.UID_BASE + i)
                    took["tmpfs"] = time.perf_counter() - t
                t = time.perf_counter()
                hardening.close_other_fds({write_end})
                os.chdir(scratch)
                hardening.set_rlimits(SandboxConfig())
                took["process"] = time.perf_counter() - t
                if report.layers["netns"]:
                    t = time.perf_counter()
                    hardening.enter_private_network()
                    took["netns"] = time.perf_counter() - t
                if report.layers["landlock"]:
                    t = time.perf_counter()
                    landlock.restrict(abi, read_paths, [scratch])
                    took["landlock"] = time.perf_counter() - t
                if report.layers["uid"]:
                    t = time.perf_counter()
                    os.chown(scratch, hardening.UID_BASE + i, hardening.UID_BASE + i)
                    hardening._switch_uid(hardening.UID_BASE + i, keep_read)
                    took["uid"] = time.perf_counter() - t
                if report.layers["seccomp"]:
                    t = time.perf_counter()
                    seccomp.install(os.getpid())
                    took["seccomp"] = time.perf_counter() - t
                os.write(write_end, json.dumps(took).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        data = os.read(read_end, 65536)
        os.close(read_end)
        os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
        for name, seconds in json.loads(data).items():
            samples[name].append(seconds * 1000)
    return {name: round(statistics.median(v), 3) for name, v in samples.items() if v}


def exit_ms(repeats: int) -> dict[str, float]:
    """Median ms from a child's last write to ``waitpid`` returning: bare, and after the scratch tmpfs."""
    kinds = ["bare", "tmpfs"] if probe().layers["tmpfs"] else ["bare"]
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(repeats):
        for kind in kinds:
            scratch = tempfile.mkdtemp(prefix="spadegym-bench-")
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    if kind == "tmpfs":
                        hardening.mount_private_scratch(scratch, SandboxConfig().scratch_mb, os.getuid())
                    os.write(write_end, b"x")
                finally:
                    os._exit(0)
            os.close(write_end)
            os.read(read_end, 1)
            written = time.perf_counter()
            os.waitpid(pid, 0)
            samples[kind].append((time.perf_counter() - written) * 1000)
            os.close(read_end)
            shutil.rmtree(scratch, ignore_errors=True)
    return {kind: round(statistics.median(v), 3) for kind, v in samples.items()}


def reply_check_us(seconds: float) -> tuple[float, float]:
    """Microseconds the host spends checking one step reply, and the same over a plain decode."""
    value = {"observation": "You are in room 3. Doors lead north and east.\nWhat now?", "reward": 0.0,
             "terminated": False, "truncated": False, "info": {"room": 3},
             "valid_actions": ["north", "east", "look", "take key", "open door", "wait", "south", "west"]}
    line = P.encode({"id": 7, "ok": True, "value": value, "output": "", "seconds": 0.001})[:-1]
    limits = SandboxConfig().reply_limits()

    def checked() -> None:
        outcome = P.parse_reply(line, 7)
        schema.check_value("step", None, outcome.value, limits)

    def decoded() -> None:
        _DECODE(line.decode())

    per_call = N_ENVS * 1e6  # rate() counts N_ENVS steps per call
    return per_call / rate(checked, seconds), per_call / rate(decoded, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per throughput figure")
    parser.add_argument("--starts", type=int, default=30, help="worker starts per start-time figure")
    args = parser.parse_args()

    framework, echo = throughput(args.seconds)
    layers = start_ms({tier: SandboxConfig(**flags) for tier, flags in LAYER_STEPS.items()}, args.starts)
    figures = {
        "tier": probe().tier,
        "framework_steps_per_s": round(framework),
        "echo_steps_per_s": round(echo),
        "ratio": round(framework / echo, 3),
        "zygote_start_ms": layers[probe().tier],
        "fresh_start_ms": round(fresh_start_ms(args.starts), 3),
        "layer_start_ms": layers,
        "layer_cost_ms": layer_costs_ms(args.starts),
        "exit_ms": exit_ms(args.starts),
        "inprocess_calls_per_s": round(inprocess_rate(args.seconds)),
        "envs": N_ENVS,
        "cpus": os.cpu_count(),
    }
    figures["start_speedup"] = round(figures["fresh_start_ms"] / figures["zygote_start_ms"], 2)
    checked, decoded = reply_check_us(args.seconds)
    figures["reply_check_us"] = round(checked, 2)
    figures["reply_check_vs_decode"] = round(checked / decoded, 2)
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
