"""Remote levels as proposals: an OpenEnv server is a level of the run, checked over the wire instead of by the gate.

Each proposal is a level of kind ``remote`` (``level.Remote``: the URL and how
to talk to it), made only from the run's own configuration, with its verdict
already made from what the wire allows (``wire_verdict``), so the loop does not
send it to the sandbox gate; the verdict's warnings name what could not be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..executor.openenv import wire_check, wire_verdict
from ..level import Level, Lineage
from .base import Candidate, DesignContext
from .notes import RemoteNotes

VERSION = "openenv-1"


class RemoteLevelDesigner:
    """Proposes its remote levels once each, checked over the wire; one its server does not answer waits for a later round."""

    name = "openenv"

    def __init__(self, levels: Sequence[Level]):
        if any(level.remote is None for level in levels):
            raise ValueError("a remote-level designer proposes remote levels only")
        self.levels = [replace(level, lineage=Lineage(operator="remote", designer=VERSION)) for level in levels]
        self.cursor = 0  # next level to propose

    async def propose(self, context: DesignContext) -> list[Candidate]:
        out: list[Candidate] = []
        while self.cursor < len(self.levels) and len(out) < context.count:
            level = self.levels[self.cursor]
            assert level.remote is not None
            check = await asyncio.to_thread(wire_check, level.remote)
            if "reachable" in check.failed:
                break  # infrastructure, not the level's fault: it is proposed again next time
            out.append(Candidate(level, candidate_id=f"remote-{self.cursor:05d}",
                                 verdict=wire_verdict(level.remote, check), notes=RemoteNotes(level.remote.url)))
            self.cursor += 1
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = int(state.get("cursor", 0))
