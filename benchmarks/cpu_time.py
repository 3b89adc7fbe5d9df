"""CPU seconds of this process and of a sandbox's zygote with its ended workers (user + system).

The benchmarks run on a shared machine where wall time follows the load; the
CPU time of the process tree counts the work done, so ratios of it carry over.
A worker's CPU reaches its zygote's count when the zygote reaps it: measure
after the work's workers have been closed.
"""

from __future__ import annotations

import os
import time

from spadegym.sandbox import Sandbox


def tree_cpu_s(sandbox: Sandbox | None = None) -> float:
    """User + system seconds of this process, its reaped children, and ``sandbox``'s zygote and ended workers."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    zygote = getattr(sandbox, "_zygote", None)
    if zygote is not None and zygote.poll() is None:
        time.sleep(0.05)  # let the zygote reap the workers just closed
        try:
            with open(f"/proc/{zygote.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return total
        total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    return total
