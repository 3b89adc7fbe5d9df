"""Several level sources in one curriculum: the run's designer and its sources propose together.

    designer = MixedDesigner(make_designer("mutation"), [SourcePart("reasoning-gym:chain_sum", rg, 0.25)])

Each call's slots are dealt by smooth weighted round robin over the parts
that train the asked skill (a part with ``skills`` proposes only for those):
every slot adds each part's share to its credit and goes to the part with the
most credit, which pays one slot. Over a run each part gets its share of the
slots it could fill, in any batch size, and no part waits long for its turn.
A source that comes up short (a pool used up, a remote level proposed once)
leaves its slots to the run's designer.

Every candidate keeps the part it came from (``Candidate.part``, stored as
``meta["source"]``), and so does its feedback (``Feedback.part``): ``update``
hands each part the rewards of its own candidates only. A source's candidate ids
carry its name too, so that ids stay unique in the run; nothing reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .base import Abilities, Candidate, DesignContext, Designer, Feedback, abilities

#: Separates a source's name from its designer's own candidate id.
_SEP = "/"


@dataclass
class SourcePart:
    """One level source of a mixed curriculum."""

    name: str  # unique in the run: the spec ("reasoning-gym:chain_sum", "pool:games", "openenv:http://...")
    designer: Designer
    share: float  # of the slots it may fill
    skills: frozenset[str] | None = None  # the skills it proposes for (None: any)
    lists_actions: bool | None = None  # whether its levels list their legal actions (None: it depends on the level)

    def trains(self, skill: str) -> bool:
        return self.skills is None or skill in self.skills


class MixedDesigner:
    """The run's designer (``main``) and its sources, proposing in one round by share."""

    def __init__(self, main: Designer, sources: list[SourcePart], main_share: float):
        self.main = SourcePart(main.name, main, main_share)
        self.sources = list(sources)
        self.name = "+".join([main.name, *(p.name for p in sources)])
        self.credit = {p.name: 0.0 for p in self.parts}
        # It learns when a part does; its weights are the run designer's (the sources have none to carry).
        self.abilities = Abilities(learns=any(abilities(p.designer).learns for p in self.parts),
                                   checkpointed=abilities(main).checkpointed)

    @property
    def parts(self) -> list[SourcePart]:
        return [self.main, *self.sources]

    def deal(self, skill: str, count: int) -> dict[str, int]:
        """How many of ``count`` slots for ``skill`` each part gets (smooth weighted round robin)."""
        eligible = [p for p in self.parts if p.trains(skill)]
        total = sum(p.share for p in eligible)
        dealt = {p.name: 0 for p in self.parts}
        if total <= 0:
            dealt[self.main.name] = count
            return dealt
        for _ in range(count):
            for p in eligible:
                self.credit[p.name] += p.share / total
            best = max(eligible, key=lambda p: self.credit[p.name])  # ties: the run's designer, then in order
            self.credit[best.name] -= 1.0
            dealt[best.name] += 1
        return dealt

    async def propose(self, context: DesignContext) -> list[Candidate]:
        dealt = self.deal(context.skill, context.count)
        from_sources: list[Candidate] = []
        short = 0
        for part in self.sources:
            if dealt[part.name]:
                made = await part.designer.propose(replace(context, count=dealt[part.name]))
                short += dealt[part.name] - len(made)
                from_sources += [self._tag(part, c, own=False) for c in made]
        wanted = dealt[self.main.name] + short
        made = await self.main.designer.propose(replace(context, count=wanted)) if wanted else []
        return [self._tag(self.main, c, own=True) for c in made] + from_sources

    @staticmethod
    def _tag(part: SourcePart, candidate: Candidate, own: bool) -> Candidate:
        candidate.part = part.name
        if not own:
            candidate.candidate_id = f"{part.name}{_SEP}{candidate.candidate_id}"
        return candidate

    def update(self, feedback: list[Feedback]) -> Any:
        """Each part learns from its own candidates' rewards (the ones that learn); the run's designer reports."""
        mine: dict[str, list[Feedback]] = {p.name: [] for p in self.parts}
        for earned in feedback:
            owner = next((p for p in self.sources if earned.part == p.name), None)
            if owner is None:
                mine[self.main.name].append(earned)
            else:  # the part's own id, as it proposed it
                mine[owner.name].append(replace(earned, candidate_id=earned.candidate_id.removeprefix(owner.name + _SEP)))
        for part in self.sources:
            if abilities(part.designer).learns and mine[part.name]:
                part.designer.update(mine[part.name])  # type: ignore[attr-defined]
        if abilities(self.main.designer).learns:  # every round, as without sources
            return self.main.designer.update(mine[self.main.name])  # type: ignore[attr-defined]
        return None

    def save(self, directory: Path) -> Any:
        """The run designer's weights (none: nothing to write)."""
        return self.main.designer.save(directory) if self.abilities.checkpointed else None  # type: ignore[attr-defined]

    def restore(self, directory: Path) -> None:
        if self.abilities.checkpointed:
            self.main.designer.restore(directory)  # type: ignore[attr-defined]

    def state_dict(self) -> dict[str, Any]:
        return {"credit": dict(self.credit), "parts": {p.name: p.designer.state_dict() for p in self.parts}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.credit.update({k: float(v) for k, v in state.get("credit", {}).items() if k in self.credit})
        for part in self.parts:
            if part.name in state.get("parts", {}):
                part.designer.load_state_dict(state["parts"][part.name])
