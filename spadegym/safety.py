"""The safety settings: what a run may reach and how untrusted code is confined, always the user's, never a store's.

A run directory, a suite, a checkpoint, a baseline and everything a model server returns are data: whoever
wrote them could have written anything. The settings that decide what untrusted code and spadegym itself may
reach (sandbox layers and budgets, the hosts contacted, the environment variables read) therefore come from the
user's own command line and config alone. A resumed run replays its experiment from the store and takes these
from the user (``loop.safety``); an export that runs levels takes its sandbox from the user too. Where a run
writes is the directory the user names.
"""

from __future__ import annotations

import copy
from typing import Any

#: The safety settings, by key path in a run's config (a section stands for every setting under it), and why.
SAFETY_SETTINGS: dict[str, str] = {
    "sandbox": "the run's sandbox: isolation layers and tier, budgets, the modules its zygote imports",
    "validation.sandbox": "the gate's own sandbox (spadegym validate, export --format spade)",
    "validation.allowed_imports": "what untrusted code may import past the gate's static check",
    "validation.max_source_bytes": "the largest untrusted file the gate reads",
    "validation.verdict_budget_s": "the time one verdict's sandbox probes may take",
    "llm.api_key_env": "the environment variable whose value every model request carries as its bearer token",
    # Which trackers (report_to) is the experiment's; where they upload, and whether, is the user's.
    "tracking.project": "the wandb or trackio project the run is uploaded to",
    "tracking.wandb_mode": "whether wandb uploads (online)",
    "tracking.trackio_space": "the Hugging Face Space trackio syncs to (with your Hugging Face token)",
    "ray.address": "the cluster the run joins and ships levels to",
    "train.vllm_python": "the program a run starts to serve its model (a stored one would run anything)",
    "train.vllm_args": "the arguments of that server (they can load remote code or listen on other addresses)",
    "train.vllm_urls": "the inference servers the run samples from and pushes its trained weights to",
    "train.vllm_weights_dir": "where the run writes its trained weights for the servers to read",
}

#: Role settings whose spec may name a host (openai:MODEL@URL, openenv:URL): the role is the experiment's,
#: the host is the user's (model requests carry the user's API key there).
HOST_ROLES = ("designer", "agent", "sources")

#: What a resume may change besides the safety settings and hosts: --rounds extends the run.
EXTENDS = ("rounds",)


def is_safety_key(key: str) -> bool:
    """Whether the dotted ``key`` is, or lies under, a safety setting."""
    return any(key == path or key.startswith(path + ".") for path in SAFETY_SETTINGS)


def leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """``data`` flattened to ``{"a.b": value}`` (lists and scalars are leaves)."""
    if not isinstance(data, dict):
        return {prefix: data} if prefix else {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(leaves(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


_ABSENT = object()


def get_path(data: Any, dotted: str, default: Any = None) -> Any:
    """The value at ``dotted`` in nested dicts, or ``default``."""
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``dotted`` in nested dicts, making (or replacing with) dicts on the way."""
    *parents, last = dotted.split(".")
    for key in parents:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[last] = value


def with_users_safety(stored: Any, defaults: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """``stored`` (a config as a store holds it) with every safety setting that ``defaults`` holds replaced by
    the user's: its default, then what ``settings`` (the user's config and command line) give under it."""
    users = copy.deepcopy(defaults)
    for key, value in leaves(settings or {}).items():
        if is_safety_key(key):
            set_path(users, key, value)
    merged = copy.deepcopy(stored) if isinstance(stored, dict) else {}
    for path in SAFETY_SETTINGS:
        value = get_path(users, path, _ABSENT)
        if value is not _ABSENT:
            set_path(merged, path, copy.deepcopy(value))
    return merged
