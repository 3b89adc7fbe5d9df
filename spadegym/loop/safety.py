"""Resuming a run: the experiment from its store, every safety setting (``spadegym.safety``) from the user.

A resumed run replays what its store holds, so its rounds go on as they began; the sandbox, the hosts it
contacts and the environment variables it reads are the user's, and what differs from the store is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserError
from ..safety import EXTENDS, HOST_ROLES, SAFETY_SETTINGS, get_path, is_safety_key, leaves, with_users_safety


def users_defaults() -> dict[str, Any]:
    """A run's default settings, as a store holds them (where each safety setting starts from)."""
    from .config import RunConfig

    return RunConfig().model_dump(mode="json")


def host(role: str, value: Any) -> str | None:
    """The host a role's spec names (``openai:MODEL@URL``'s URL, ``openenv:URL``'s), or None."""
    text = value.get("source") if isinstance(value, dict) else value
    if not isinstance(text, str):
        return None
    from ..agents.registry import AGENTS
    from ..designers.registry import DESIGNERS
    from ..designers.sources import OPENENV, SOURCES

    registry = {"agent": AGENTS, "designer": DESIGNERS}.get(role, SOURCES)
    try:
        spec = registry.parse(text)
    except Exception:  # noqa: BLE001 - a spec no registry reads names no host (the config check says why)
        return None
    if spec.kind == "openai":
        return spec.argument.partition("@")[2] or None
    return (spec.argument or None) if registry is SOURCES and spec.kind == OPENENV else None


def _without_host(role: str, value: Any) -> Any:
    """The role's setting with its host taken out (what the experiment is)."""
    if role == "sources":
        return [_without_host("source", item) for item in value] if isinstance(value, list) else value
    if isinstance(value, dict):
        return {**value, "source": _without_host(role, value.get("source"))}
    found = host(role, value)
    return value[: -len(found)].rstrip("@:") if found else value


def _role_hosts(role: str, value: Any) -> list[str]:
    items = value if role == "sources" and isinstance(value, list) else [value]
    return [found for item in items if (found := host(role if role != "sources" else "source", item))]


def resumed_config(stored: dict[str, Any], settings: dict[str, Any] | None, where: str | Path) -> tuple[Any, list[str]]:
    """The config a resumed run goes on with, and one line per safety setting or host that differs from the store.

    The experiment is the store's, so the run replays as it was; every safety setting is the user's
    (``settings``: a config file's and the command line's, as ``read_settings`` returns them). A setting of
    ``settings`` that would change the experiment is refused in one sentence, and so is a stored role that
    names a host the user did not name.
    """
    from .config import validate_config

    source = f"{where}/run.sqlite"
    normal = validate_config(stored, source=source, stored=True).model_dump(mode="json")
    given = settings or {}
    roles = {role: _normalised_role(role, given[role]) for role in HOST_ROLES if role in given}
    _refuse_experiment_changes(normal, given, roles, where)
    merged = with_users_safety(normal, users_defaults(), given)
    for role in HOST_ROLES:
        if role in roles:
            merged[role] = roles[role]
        elif _role_hosts(role, normal.get(role)):
            raise UserError(_unnamed_host(role, normal[role], where))
    for key, value in given.items():
        if key in EXTENDS:
            merged[key] = value
    config = validate_config(merged, source="the settings given beside --resume", stored=True)
    return config, differences(normal, config.model_dump(mode="json"))


def _normalised_role(role: str, value: Any) -> Any:
    """A role's setting as the user gave it, written out as a store holds it (every option of a source)."""
    from .config import validate_config

    return validate_config({role: value}, source="the settings given beside --resume",
                           stored=True).model_dump(mode="json")[role]


def _refuse_experiment_changes(normal: dict[str, Any], given: dict[str, Any], roles: dict[str, Any],
                               where: str | Path) -> None:
    changed = [key for key, value in leaves({k: v for k, v in given.items() if k not in HOST_ROLES}).items()
               if not is_safety_key(key) and key.split(".")[0] not in EXTENDS and get_path(normal, key) != value]
    changed += [role for role, value in roles.items()
                if _without_host(role, value) != _without_host(role, normal.get(role))]
    if changed:
        raise UserError(
            f"{', '.join(repr(k) for k in changed)} cannot change a resumed run, which continues with the "
            f"experiment stored in {where} (see: spadegym run --resume {where} --print-config); beside --resume "
            f"only the safety settings ({', '.join(SAFETY_SETTINGS)}), the hosts of {', '.join(HOST_ROLES)} "
            "and --rounds may be given: drop the others, or start a new run with --out DIR.")


def _unnamed_host(role: str, value: Any, where: str | Path) -> str:
    hosts = ", ".join(_role_hosts(role, value))
    how = (f"--{role} {_without_host(role, value)}@URL" if role != "sources"
           else "the run's sources section in --config (or --set sources=[...]) with the URLs you want")
    return (f"the run stored in {where} has its {role} contact {hosts}, and a resumed run contacts only the hosts "
            f"you name: pass {how} (the same URL, or where its server is now).")


def differences(stored: dict[str, Any], in_force: dict[str, Any]) -> list[str]:
    """One line per safety setting (and role host) whose value in force differs from the stored one."""
    lines = []
    for path in SAFETY_SETTINGS:
        was, now = leaves(get_path(stored, path), path), leaves(get_path(in_force, path), path)
        if not was and not now:
            was, now = {path: get_path(stored, path)}, {path: get_path(in_force, path)}
        for key in sorted(set(was) | set(now)):
            if was.get(key) != now.get(key):
                lines.append(f"{key}: {_shown(now.get(key))} (the store had {_shown(was.get(key))})")
    for role in HOST_ROLES:
        was_hosts, now_hosts = _role_hosts(role, stored.get(role)), _role_hosts(role, in_force.get(role))
        if was_hosts != now_hosts:
            lines.append(f"{role} host: {', '.join(now_hosts) or 'none'} (the store had {', '.join(was_hosts)})")
    return lines


def _shown(value: Any) -> str:
    import json

    return json.dumps(value)
