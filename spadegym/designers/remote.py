"""Remote levels as proposals: an OpenEnv server is a level of the run, checked over the wire instead of by the gate.

The candidate is the level's descriptor file (``executor.openenv.RemoteLevel``)
with its verdict already made from what the wire allows (``wire_verdict``), so
the loop does not send it to the sandbox gate; the verdict's warnings name
what could not be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..executor.openenv import RemoteLevel, wire_verdict
from .base import Candidate, DesignContext, Lineage


class RemoteLevelDesigner:
    """Proposes its remote levels once each, checked over the wire; one its server does not answer waits for a later round."""

    name = "openenv"

    def __init__(self, levels: Sequence[RemoteLevel]):
        self.levels = list(levels)
        self.cursor = 0  # next level to propose

    async def propose(self, context: DesignContext) -> list[Candidate]:
        out: list[Candidate] = []
        while self.cursor < len(self.levels) and len(out) < context.count:
            level = self.levels[self.cursor]
            check = await asyncio.to_thread(level.check)
            if "reachable" in check.failed:
                break  # infrastructure, not the level's fault: it is proposed again next time
            out.append(Candidate(source=level.source(), skill=level.skill, hint=level.hint,
                                 lineage=Lineage(operator="remote", designer="openenv-1"),
                                 candidate_id=f"remote-{self.cursor:05d}", verdict=wire_verdict(level, check),
                                 meta={"url": level.url}))
            self.cursor += 1
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = int(state.get("cursor", 0))
