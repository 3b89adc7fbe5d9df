"""No sandbox process outlives the process that owns the sandbox, however that owner ends.

An owner process opens a few environments and prints the zygote's and the
workers' pids; the test kills it with SIGKILL (no cleanup code runs) and every
one of those processes must end. Variants: the owner forked a child that still
holds the zygote's socket (so the zygote sees no end of file), and the zygote
itself is the one killed (its workers must not be orphaned), and a worker that
cleared the death signal the sandbox set for it (refused by seccomp; at the bare
``process`` tier the zygote's watch on its owner still ends it). The sandbox
directory goes too: the zygote removes it, and when the zygote was killed as
well, the next sandbox started on the machine does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from spadegym.sandbox import Sandbox, SandboxConfig
from spadegym.sandbox.directories import sweep_abandoned

FIXTURES = Path(__file__).parents[1] / "fixtures"
KEY_DOOR = FIXTURES / "envs" / "key_door.py"
CLEARS_DEATH_SIGNAL = FIXTURES / "hostile" / "clears_death_signal.py"

OWNER = """
import os, sys, time
from pathlib import Path
from spadegym.sandbox import Sandbox, SandboxConfig

bare = sys.argv[3] == "process"
box = Sandbox(SandboxConfig(seccomp=False, landlock=False, namespaces=False) if bare else None)
handles = [box.open(Path(sys.argv[1]).read_text(), Path(sys.argv[1]).name) for _ in range(3)]
cleared = [h.reset(seed=1) for h in handles]
if "clears" in sys.argv[1]:  # the death signal is cleared (bare) or refused; the step never returns
    assert all(o.ok if bare else o.status == "forbidden" for o in cleared), cleared
    for h in handles:
        h.submit("step", action="go")
    time.sleep(0.5)  # the workers are in their endless step
else:
    assert all(o.ok for o in cleared), cleared
forked = 0
if sys.argv[2] == "fork":  # a child that keeps a copy of every descriptor, the zygote's socket included
    forked = os.fork()
    if forked == 0:
        time.sleep(60)
        os._exit(0)
print(box._root, forked, box._zygote.pid, *[h.worker.pid for h in handles], flush=True)
time.sleep(60)
"""


@dataclass
class Owner:
    process: subprocess.Popen
    root: str  # the sandbox directory
    forked: int  # pid of the owner's forked child, or 0
    zygote: int
    workers: list[int]

    def end_all(self) -> None:
        """Kill whatever still runs (only when a test has failed) and reap the owner."""
        for pid in (self.forked, self.zygote, *self.workers):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.process.kill()
        self.process.wait()


def _start_owner(mode: str, env: Path = KEY_DOOR, tier: str = "strongest") -> Owner:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(env), mode, tier], stdout=subprocess.PIPE, text=True)
    line = owner.stdout.readline() if owner.stdout else ""
    if not line:
        owner.kill()
        pytest.fail(f"the owner process did not start its sandbox (exit code {owner.wait()})")
    root, *pids = line.split()
    forked, zygote, *workers = (int(x) for x in pids)
    return Owner(owner, root, forked, zygote, workers)


def _gone(path: str, within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(path)


@pytest.mark.parametrize("mode", ["plain", "fork"])
def test_killing_the_owner_ends_the_zygote_and_every_worker(mode: str, still_running) -> None:
    _kill_owner_and_check(_start_owner(mode), still_running)


@pytest.mark.parametrize("tier", ["strongest", "process"])
def test_a_worker_that_cleared_its_death_signal_ends_with_its_owner(tier: str, still_running) -> None:
    _kill_owner_and_check(_start_owner("plain", CLEARS_DEATH_SIGNAL, tier), still_running)


def _kill_owner_and_check(owner: Owner, still_running) -> None:
    try:
        assert still_running([owner.zygote, *owner.workers], within_s=0) == [owner.zygote, *owner.workers]
        owner.process.send_signal(signal.SIGKILL)
        owner.process.wait()
        assert still_running([owner.zygote, *owner.workers]) == []
        if not owner.forked:  # a forked copy of the owner still runs: the directory is still in use
            assert _gone(owner.root), "the sandbox directory outlived its owner"
    finally:
        owner.end_all()


def test_killing_the_zygote_ends_its_workers(still_running) -> None:
    owner = _start_owner("plain")
    try:
        os.kill(owner.zygote, signal.SIGKILL)
        assert still_running(owner.workers) == []
    finally:
        owner.end_all()


def test_a_directory_left_by_an_owner_killed_with_its_zygote_goes_with_the_next_sandbox(still_running) -> None:
    owner = _start_owner("plain", tier="process")
    try:
        os.kill(owner.zygote, signal.SIGKILL)  # nobody left to clean up: the zygote first, then its owner
        assert still_running([owner.zygote]) == []
        owner.process.send_signal(signal.SIGKILL)
        owner.process.wait()
        assert still_running(owner.workers) == []
        assert os.path.isdir(owner.root)
        with Sandbox(SandboxConfig(seccomp=False, landlock=False, namespaces=False)) as fresh:
            assert fresh._root != owner.root
            assert not os.path.exists(owner.root)
            assert fresh._root not in sweep_abandoned()  # a live sandbox's directory is never swept
            assert os.path.isdir(fresh._root)
    finally:
        owner.end_all()
