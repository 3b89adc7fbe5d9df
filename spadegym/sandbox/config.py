"""Sandbox settings: one pydantic model, a help line per field."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from .schema import Limits

#: Isolation tiers, weakest first. ``strict`` refuses to run below a chosen one.
TIERS = ("process", "seccomp", "landlock", "namespaces")

#: Trusted modules that take seconds of CPU to import: the zygote imports one the first time a file imports it,
#: outside every time budget, so a verdict times what the file does and not the import, whatever the machine's load.
WARM_MODULES = ("reasoning_gym",)
_IMPORTS = re.compile(r"^\s*(?:import|from)\s+(" + "|".join(map(re.escape, WARM_MODULES)) + r")\b", re.M)


def modules_to_warm(source: str) -> list[str]:
    """The ``WARM_MODULES`` a file imports (a false match only imports a trusted module early)."""
    return sorted(set(_IMPORTS.findall(source)))


class SandboxConfig(BaseModel):
    """Limits and isolation for environment workers."""

    model_config = {"extra": "forbid"}

    load_timeout_s: float = Field(10.0, gt=0, description="Wall-clock limit for loading a file and creating the environment.")
    step_timeout_s: float = Field(5.0, gt=0, description="Wall-clock limit for one reset, step or other call.")
    memory_mb: int = Field(1024, ge=64, description="Address-space limit of a worker (RLIMIT_AS).")
    cpu_seconds: int = Field(300, ge=1, description="Total CPU seconds a worker may use before it is killed (RLIMIT_CPU).")
    file_size_mb: int = Field(16, ge=0, description="Largest file a worker may write in its scratch directory (RLIMIT_FSIZE).")
    scratch_mb: int = Field(64, ge=1, description="Most a worker may keep in its scratch directory, all files together (a private tmpfs under the namespaces tier; elsewhere checked before each episode).")
    open_files: int = Field(64, ge=16, description="Open file descriptors per worker (RLIMIT_NOFILE).")
    output_limit: int = Field(16_384, ge=0, description="Characters of the environment's prints kept per call.")
    line_limit: int = Field(4 << 20, ge=1024, description="Largest protocol line (bytes) accepted from a worker.")
    episode_budget_s: float = Field(30.0, gt=0, description="Sandbox time one episode may use in all, from its reset on (bounds an episode of slow steps; the agent's time is not counted).")
    episode_chars: int = Field(2_000_000, ge=1024, description="Characters of text (observations, menus, hints, prints) one episode's replies may bring to the host, and so to the store; more is a too_large failure.")
    max_episode_turns: int = Field(1000, ge=1, description="Most turns an episode may last, whatever max_turns the file declares.")
    menu_limit: int = Field(4096, ge=1, description="Most actions valid_actions() may list at once; a longer menu is a too_large failure.")
    menu_chars: int = Field(65_536, ge=1, description="Most characters all listed actions may hold together; more is a too_large failure.")
    scratch_inodes: int = Field(4096, ge=16, description="Most files and directories a worker may create in its private scratch tmpfs (namespaces tier).")
    recycle_after: int = Field(64, ge=1, description="Episodes served by one environment instance before its worker slot is replaced.")
    episodes_per_worker: int = Field(8, ge=1, le=64, description="Episodes of one file a worker serves at once when playing rounds, for files a built-in family rendered (other files get a worker per episode); each in its own slot (own instance, module namespace and random; one wake-up a turn for all), with memory_mb and cpu_seconds once per instance; what ends the worker ends them all, each with its cause. 1: a worker per episode.")
    preload: list[str] = Field(default_factory=list, description="Trusted modules the zygote imports when it starts, before any worker, so that files importing them start warm and every worker sees the same modules (a run adds reasoning_gym for its reasoning-gym sources).")
    min_tier: str | None = Field(None, description=f"Refuse to run below this isolation tier (one of {', '.join(TIERS)}).")
    seccomp: bool = Field(True, description="Install the seccomp filter when the kernel allows it.")
    landlock: bool = Field(True, description="Restrict the file system with Landlock when the kernel allows it.")
    namespaces: bool = Field(True, description="Use network and IPC namespaces and a private scratch tmpfs when privileges allow (a root host gives workers uids of their own either way).")

    def reply_limits(self) -> Limits:
        """The sizes the host accepts in a worker's reply."""
        return Limits(menu_actions=self.menu_limit, menu_chars=self.menu_chars)
