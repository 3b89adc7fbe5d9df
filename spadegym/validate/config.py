"""Validation settings: one pydantic model, a help line per field."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..sandbox import SandboxConfig

#: What an environment may import: the standard library's pure computation, dates and times, text and
#: the harmless runtime modules generated code reaches for (``sys.setrecursionlimit``, ``time``,
#: ``logging``). Not files, processes, network, threads, code loading or serialization of code:
#: the static check refuses those, and the sandbox contains anything that slips through.
DEFAULT_ALLOWED_IMPORTS = (
    "__future__", "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
    "colorsys", "contextlib", "copy", "dataclasses", "datetime", "decimal", "difflib", "enum", "fractions",
    "functools", "graphlib", "hashlib", "heapq", "html", "ipaddress", "itertools", "json", "keyword", "logging",
    "math", "numbers", "operator", "pprint", "queue", "random", "re", "secrets", "statistics", "string",
    "struct", "sys", "textwrap", "time", "types", "typing", "unicodedata", "uuid", "warnings", "weakref",
    "zlib", "zoneinfo",
    "reasoning_gym",  # not the standard library: the files spadegym writes for reasoning-gym tasks use its generators and scorers
)


class ValidationConfig(BaseModel):
    """How hard the gate probes an environment, and what it accepts."""

    model_config = {"extra": "forbid"}

    seed: int = Field(0, description="Base seed: the probes' instance seeds and random choices derive from it.")
    max_turns: int = Field(25, ge=1, description="Turn budget for environments that declare no max_turns (the runner's default).")
    max_source_bytes: int = Field(65_536, ge=1, description="Largest accepted environment file, in bytes.")
    allowed_imports: list[str] = Field(list(DEFAULT_ALLOWED_IMPORTS), description="Top-level modules an environment may import.")
    random_episodes: int = Field(16, ge=1, description="Episodes the random policy plays to estimate its win rate.")
    random_win_threshold: float = Field(0.5, ge=0, le=1, description="Largest random-policy win rate allowed (above it the env is degenerate).")
    random_workers: int = Field(0, ge=0, description="Fresh sandbox workers that play only random episodes (a file without solution() gets one); the main and twin probes' workers play the rest after their own probes.")
    jobs: int = Field(4, ge=1, description="Files validate_paths probes at once (threads sharing one sandbox).")
    verdict_budget_s: float = Field(30.0, gt=0, description="Wall-clock time one verdict's sandbox probes may take in all; past it the verdict is a timeout.")
    repeat_steps: int = Field(30, ge=1, description="Steps of one repeated garbage action when probing robustness.")
    reward_range_is_error: bool = Field(False, description="Treat rewards outside [-1, 1] as invalid (default: a warning, since the host clamps them).")
    check_leaks: bool = Field(True, description="Check that the answer appears neither in the first observation nor in the hint.")
    min_answer_chars: int = Field(3, ge=1, description="Shortest non-numeric answer the leak checks look for (shorter ones match by chance).")
    min_answer_digits: int = Field(2, ge=1, description="Fewest digits a numeric answer needs before the leak checks look for it.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Limits for the sandbox the gate creates when none is passed in.")
