"""Confinement applied inside a freshly forked worker, layer by layer.

Each layer fails soft: ``probe`` reports which layers the machine supports,
``confine`` applies the supported ones and returns their names.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass, field

from .config import TIERS, SandboxConfig

_MB = 1 << 20


@dataclass
class TierReport:
    """What isolation this machine gives workers."""

    tier: str
    layers: dict[str, bool] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def rank(self) -> int:
        return TIERS.index(self.tier)


def probe(config: SandboxConfig | None = None) -> TierReport:
    """Find the strongest tier this machine supports (cheap; no worker needed)."""
    layers = {"process": True}
    return TierReport(tier="process", layers=layers, missing={})


def set_rlimits(config: SandboxConfig) -> None:
    limits = {
        resource.RLIMIT_AS: config.memory_mb * _MB,
        resource.RLIMIT_CPU: config.cpu_seconds,
        resource.RLIMIT_FSIZE: config.file_size_mb * _MB,
        resource.RLIMIT_NOFILE: config.open_files,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def close_other_fds(keep: set[int]) -> None:
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def confine(config: SandboxConfig, scratch: str, keep_fds: set[int], slot: int = 0) -> list[str]:
    """Apply every supported layer to the current (worker) process."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    close_other_fds(keep_fds)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update({"HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    set_rlimits(config)
    sys.setrecursionlimit(2000)
    return ["process"]
