"""Where levels are opened: each where its kind says (files in a sandbox, remote levels over OpenEnv), and judged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..level import Level
from ..sandbox import Outcome, SandboxConfig
from .base import EnvHost, FileHost
from .openenv import OpenEnvHost, RemoteHandle, wire_verdict


class LevelHost:
    """Opens each level where its kind says it runs: files on ``files`` (a sandbox), remote levels in OpenEnv sessions.

    The OpenEnv sessions start with the first remote level opened, with the files' sandbox limits
    (or ``remote``'s own); ``close`` ends them (the files' host belongs to whoever made it).
    """

    def __init__(self, files: FileHost | None, remote: OpenEnvHost | None = None):
        self.files = files
        self._remote = remote  # the OpenEnv sessions, once a remote level is opened

    @property
    def episodes_per_worker(self) -> int:
        """Files share the file host's workers as they would alone; an OpenEnv session hosts one episode."""
        return self.files.episodes_per_worker if self.files is not None else 1

    def open(self, level: Level, filename: str = "<env>", max_turns: int | None = None, share: int = 1) -> Any:
        if level.remote is not None:
            if self._remote is None:
                config = getattr(self.files, "config", None)
                self._remote = OpenEnvHost(config=config if isinstance(config, SandboxConfig) else None)
            return self._remote.open(level.remote, filename, max_turns)
        if self.files is None:
            raise ValueError(f"{filename} is an environment file, and this host plays remote levels only")
        return self.files.open(level.source, filename, max_turns, share=share)

    def gather(self, pendings: list[Any]) -> list[Outcome]:
        """Remote requests go out on the sessions' loop while the files' go to their host, at once."""
        remote = [i for i, p in enumerate(pendings) if isinstance(getattr(p, "handle", None), RemoteHandle)]
        if not remote:
            return self.files.gather(pendings) if self.files is not None else []
        local = [i for i in range(len(pendings)) if i not in set(remote)]
        results: list[Outcome | None] = [None] * len(pendings)
        if local:
            assert self.files is not None
            for i, outcome in zip(local, self.files.gather([pendings[i] for i in local])):
                results[i] = outcome
        assert self._remote is not None  # a remote handle was opened here
        for i, outcome in zip(remote, self._remote.gather([pendings[i] for i in remote])):
            results[i] = outcome
        return results  # type: ignore[return-value] - every slot is filled above

    def counters(self) -> dict[str, int]:
        """Faults on the wire so far (requests redone, requests lost); never the levels' failures."""
        return self._remote.counters() if self._remote is not None else {}

    def close(self) -> None:
        """End the OpenEnv sessions (the files' host stays open)."""
        if self._remote is not None:
            self._remote.close()


def level_host(host: EnvHost | FileHost) -> LevelHost:
    """``host`` when it opens levels already; a files' host (a ``Sandbox``) made into one."""
    return host if isinstance(host, LevelHost) else LevelHost(host)  # type: ignore[arg-type]


def validate_levels(levels: Sequence[Level], names: Sequence[str] | None,
                    gate_files: Callable[[list[tuple[Level, str]]], list[Any]]) -> list[Any]:
    """One verdict per level, in order: files by ``gate_files`` ((file, name) pairs -> their verdicts), remote
    levels by what the wire allows. ``names``: what each verdict calls its level (default ``level.py``)."""
    names = list(names) if names is not None else ["level.py"] * len(levels)
    files = [i for i, level in enumerate(levels) if level.remote is None]
    verdicts: list[Any] = [None] * len(levels)
    for i, verdict in zip(files, gate_files([(levels[i], names[i]) for i in files]) if files else []):
        verdicts[i] = verdict
    for i, level in enumerate(levels):
        if level.remote is not None:
            verdicts[i] = wire_verdict(level.remote, filename=names[i])
    return verdicts
