"""The local executor: one sandbox in this process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..level import Level
from ..sandbox import Sandbox, SandboxConfig
from .hosts import LevelHost, validate_levels


class LocalExecutor:
    """One sandbox in this process: validation of ``config.jobs`` files at once, episodes on its workers."""

    name = "local"

    def __init__(self, config: SandboxConfig | None = None):
        self.sandbox = Sandbox(config)
        self.host = LevelHost(self.sandbox)

    def validate(self, levels: Sequence[Level], config: Any, names: Sequence[str] | None = None) -> list[Any]:
        from ..validate import validate_sources

        def gate(files: list[tuple[Level, str]]) -> list[Any]:
            return validate_sources([(f.source, name, f.hint) for f, name in files], sandbox=self.sandbox,
                                    config=config)

        return validate_levels(levels, names, gate)

    def counters(self) -> dict[str, int]:
        return self.host.counters()

    def describe(self) -> str:
        return f"sandbox tier: {self.sandbox.report.tier}"

    def close(self) -> None:
        self.host.close()
        self.sandbox.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

