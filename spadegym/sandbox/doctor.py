"""What this machine supports: the sandbox tier per layer, Python, optional extras."""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
import sys
from typing import Any

from .config import SandboxConfig
from .hardening import LAYER_TIER, probe

#: Optional packages spadegym uses when present (distribution names).
EXTRAS = ("torch", "trl", "transformers", "peft", "gguf", "ray", "datasets", "tensorboard")
_CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
             "headless_shell")

_LAYER_TEXT = {
    "process": "own process and session, rlimits, clean environment, scratch dir",
    "seccomp": "system-call filter: no exec, fork, sockets, ptrace, mounts, signals to others",
    "landlock": "file system: read the interpreter and code, write only scratch; no TCP",
    "netns": "empty network namespace shared by all workers",
    "ipcns": "an IPC namespace per worker: SysV shared memory and message queues die with it",
    "uid": "a separate unprivileged uid per worker slot, unique across sandboxes",
    "tmpfs": "scratch dir on a private tmpfs of sandbox.scratch_mb and sandbox.scratch_inodes: disk use is bounded",
}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment_modules() -> dict[str, str | None]:
    """What SPADE reference files get for the modules its prompts use: ``math_verify`` (the math-verify
    package, a dependency) and numpy (allowed only when asked for)."""
    version = _version("math-verify") or _version("math_verify")
    math_verify = f"package {version}" if version else "missing: pip install math-verify"
    numpy = _version("numpy")
    return {"math_verify": math_verify,
            "numpy": f"{numpy} (opt-in: --allow-import numpy)" if numpy else None}


def doctor(config: SandboxConfig | None = None) -> dict[str, Any]:
    """Describe the sandbox tier (each layer available or why not), Python and extras."""
    report = probe(config)
    layers = {
        name: {"available": report.layers.get(name, False), "tier": LAYER_TIER[name],
               "what": _LAYER_TEXT[name], "why_missing": report.missing.get(name)}
        for name in LAYER_TIER
    }
    chromium = next((path for name in _CHROMIUM if (path := shutil.which(name))), None)
    return {
        "sandbox": {"tier": report.tier, "landlock_abi": report.landlock_abi, "layers": layers},
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "extras": {**{name: _version(name) for name in EXTRAS}, "chromium": chromium},
        "environments": environment_modules(),
    }
