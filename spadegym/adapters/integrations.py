"""Which framework integrations work on this machine, and why not when one does not (`spadegym doctor`).

An integration is available when its package is installed, its modules can be
found, and every requirement in its dependency tree is installed at a version
it accepts: a broken tree (two packages asking for different versions of a
third) is named, since it fails only at import. Reading package metadata takes
milliseconds; importing these frameworks takes seconds each, so doctor does not.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass

try:  # packaging is present wherever pip-installed frameworks are; without it the tree is not checked
    from packaging.requirements import InvalidRequirement, Requirement
except ImportError:  # pragma: no cover
    Requirement = None  # type: ignore[assignment,misc]

from ..errors import install_hint

#: Requirements not checked: torch lists setuptools for building extensions, and imports without it.
_NOT_CHECKED = {"setuptools"}


@dataclass(frozen=True)
class Integration:
    name: str
    module: str  # the module spadegym's adapter imports
    distribution: str
    extra: str  # spadegym's optional extra that installs it
    what: str


INTEGRATIONS = (
    Integration("gymnasium", "gymnasium", "gymnasium", "gymnasium",
                "environment files as gymnasium.Env (spadegym/Level-v0)"),
    Integration("openenv", "openenv.core.env_server", "openenv", "openenv",
                "spadegym serve; OpenEnv servers as levels"),
    Integration("verifiers", "verifiers.v1", "verifiers", "verifiers",
                "a verifiers v1 taskset and environment over levels (and the classic API on 0.3)"),
    Integration("trl", "trl", "trl", "train", "GRPOTrainer(environment_factory=...) over levels"),
    Integration("ray", "ray", "ray", "ray", "the Ray executor (validation and rollouts on actors)"),
    Integration("reasoning-gym", "reasoning_gym", "reasoning-gym", "reasoning-gym",
                "reasoning-gym tasks as levels (spadegym import, --source reasoning-gym:TASK)"),
    Integration("tensorboard", "tensorboard", "tensorboard", "tensorboard", "report_to tensorboard: round scalars as event files"),
    Integration("wandb", "wandb", "wandb", "wandb", "report_to wandb: round scalars to Weights & Biases (offline unless a key is set)"),
    Integration("trackio", "trackio", "trackio", "trackio", "report_to trackio: round scalars to a local trackio run"),
)


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def broken_requirement(distribution: str, extras: frozenset[str] = frozenset()) -> str | None:
    """The first requirement in ``distribution``'s tree that is missing or at a version it excludes."""
    if Requirement is None:
        return None
    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [(distribution, extras)]
    while stack:
        name, wanted = stack.pop()
        if (name.lower(), wanted) in seen:
            continue
        seen.add((name.lower(), wanted))
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            active = req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (wanted or {""}))
            if not active or req.name.lower() in _NOT_CHECKED:
                continue
            installed = _version(req.name)
            if installed is None:
                return f"{name} needs {req}, which is not installed"
            if req.specifier and not req.specifier.contains(installed, prereleases=True):
                return f"{name} needs {req}, but {req.name} {installed} is installed"
            stack.append((req.name, frozenset(req.extras)))
    return None


def check(integration: Integration) -> dict[str, object]:
    """``{"available", "version", "what", "why_missing"}`` for one integration."""
    version = _version(integration.distribution)
    why = None
    if version is None:
        why = f"not installed: {install_hint(integration.extra)}"
    else:
        try:
            # The top-level package only: finding a submodule imports its parents, which takes seconds here.
            found = importlib.util.find_spec(integration.module.split(".")[0]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            why = f"{integration.distribution} {version} is installed but has no module {integration.module}"
        elif broken := broken_requirement(integration.distribution):
            why = f"{integration.distribution} {version} will not import: {broken}"
    return {"available": why is None, "version": version, "what": integration.what, "why_missing": why}


def integrations() -> dict[str, dict[str, object]]:
    """Every integration by name, available or why not."""
    return {item.name: check(item) for item in INTEGRATIONS}
