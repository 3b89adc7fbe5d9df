"""No sandbox process outlives the process that owns the sandbox, however that owner ends.

An owner process opens a few environments and prints the zygote's and the
workers' pids; the test kills it with SIGKILL (no cleanup code runs) and every
one of those processes must end. Variants: the owner forked a child that still
holds the zygote's socket (so the zygote sees no end of file), and the zygote
itself is the one killed (its workers must not be orphaned).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

KEY_DOOR = Path(__file__).parents[1] / "fixtures" / "envs" / "key_door.py"

OWNER = """
import os, sys, time
from pathlib import Path
from spadegym.sandbox import Sandbox

box = Sandbox()
handles = [box.open(Path(sys.argv[1]).read_text(), "key_door.py") for _ in range(3)]
assert all(h.reset(seed=1).ok for h in handles)
forked = 0
if sys.argv[2] == "fork":  # a child that keeps a copy of every descriptor, the zygote's socket included
    forked = os.fork()
    if forked == 0:
        time.sleep(60)
        os._exit(0)
print(forked, box._zygote.pid, *[h.worker.pid for h in handles], flush=True)
time.sleep(60)
"""


def _start_owner(mode: str) -> tuple[subprocess.Popen, int, int, list[int]]:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(KEY_DOOR), mode], stdout=subprocess.PIPE, text=True)
    line = owner.stdout.readline() if owner.stdout else ""
    if not line:
        owner.kill()
        pytest.fail(f"the owner process did not start its sandbox (exit code {owner.wait()})")
    forked, zygote, *workers = (int(x) for x in line.split())
    return owner, forked, zygote, workers


@pytest.mark.parametrize("mode", ["plain", "fork"])
def test_killing_the_owner_ends_the_zygote_and_every_worker(mode: str, still_running) -> None:
    owner, forked, zygote, workers = _start_owner(mode)
    try:
        assert still_running([zygote, *workers], within_s=0) == [zygote, *workers]
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert still_running([zygote, *workers]) == []
    finally:
        for pid in (forked, zygote, *workers):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        owner.kill()
        owner.wait()


def test_killing_the_zygote_ends_its_workers(still_running) -> None:
    owner, _forked, zygote, workers = _start_owner("plain")
    try:
        os.kill(zygote, signal.SIGKILL)
        assert still_running(workers) == []
    finally:
        owner.kill()
        owner.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
