"""A red-team failure, from the round that found it to a case: cluster, shrink, confirm.

    cluster    a failure that dominates a known minimal failure joins its cluster; a new one is
               shrunk to its minimal form (``minimise``), which names its cluster
    confirm    a new cluster's minimal form is replayed on fresh seeds; a real failure becomes a case
               (a form refused gives way to the less shrunk ones of its shrink path; a failure
               with no confirmed form is counted but marks no region of its family as known)
    settle     a confirmed family level falls to the simplest level just below it that fails its own
               fresh seeds too, so the case keeps only what the failure needs

The memory of won levels lives here too: a won level strictly above a known failure
is replayed on fresh seeds before it is believed (``remember_win``), since it reopens
the levels above that failure to the search.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..designers.base import Designer, ModelDesigner
from ..designers.judge import Proposal
from ..envfile import normalized_code_hash
from ..families import get_family
from ..level import Params
from .clusters import ClusterMemory, cluster_key, failure_pattern
from .config import RedTeamConfig
from .flakiness import Confirmation, confirm
from .minimise import Minimal, code_size, level_size, one_step_simpler, shrink_level, simplify_file
from .probe import Probe, Prober
from .suite import Case, FoundCase

TRANSCRIPT_CHARS = 1200


class Confirmer:
    """Turns the target's failures into cases: the memory of clusters and won levels, the cases confirmed so far."""

    def __init__(self, config: RedTeamConfig, prober: Prober, memory: ClusterMemory, designer: Designer | None):
        self.config, self.prober, self.memory, self.designer = config, prober, memory, designer
        self.cases: list[FoundCase] = []
        self.refused: set[str] = set()  # clusters whose forms failed their fresh seeds only by chance
        self.won_replayed: dict[str, bool] = {}  # won levels replayed on fresh seeds -> won there too

    async def cluster(self, p: Proposal, probe: Probe) -> tuple[str, float]:
        """The failure's cluster and its novelty; a new cluster's minimal form is confirmed as a case."""
        cand = p.candidate
        known = self.memory.known_cluster(cand.family, cand.knobs, p.code_hash)
        if known is not None:
            novelty = self.memory.novelty(known)
            self.memory.add(known)
            return known, novelty
        minimal = await self.minimise(p, probe)
        kept, tries, confirmed = minimal, 0, False
        # A form that fails its fresh seeds only by chance is no case; a less shrunk one on the
        # shrink path may fail for real (a graded weakness shrinks past its edge on 4 hunt seeds).
        async for form in self.shrink_path(p, probe, minimal):
            pattern = failure_pattern(form.probe.episodes)
            key = cluster_key(cand.family, form.knobs, form.source, pattern)
            if key in self.refused:
                continue  # refused before: its fresh seeds would say the same
            if self.memory.novelty(key) < 1.0 or len(self.cases) >= self.config.max_cases or \
                    tries > self.config.backtrack:
                break
            tries += 1
            settled = await self.confirm_case(p, form, key, pattern)
            if settled is not None:
                kept, confirmed = settled, True
                break
            self.refused.add(key)
        pattern = failure_pattern(kept.probe.episodes)
        key = cluster_key(cand.family, kept.knobs, kept.source, pattern)
        novelty = self.memory.novelty(key)
        written = () if cand.family else (p.code_hash, normalized_code_hash(kept.source))
        # A failure refused on its fresh seeds is counted but marks no region as known: the levels
        # above a form that failed by chance may hold a real failure (a graded weakness), so they are judged.
        landmark = confirmed or key not in self.refused
        self.memory.add(key, cand.family if landmark else None, kept.knobs, written)
        return key, novelty

    async def shrink_path(self, p: Proposal, probe: Probe, minimal: Minimal) -> AsyncIterator[Minimal]:
        """The minimal form, then each less shrunk form that still failed, back to the level first found."""
        yield minimal
        cand = p.candidate
        if cand.family:
            family = get_family(cand.family)
            accepted = [step["level"] for step in minimal.steps if step.get("still_fails")]
            for knobs in reversed(accepted[:-1]):
                source = family.render(knobs)
                shrunk = await self.prober.probe(source, None, params=Params(family.name, knobs))
                yield Minimal(source, dict(knobs), shrunk, minimal.steps, level_size(cand.family, knobs))
        if cand.source != minimal.source:
            size = level_size(cand.family, cand.knobs) if cand.family else code_size(cand.source)
            yield Minimal(cand.source, dict(cand.knobs), probe, minimal.steps, size)

    async def minimise(self, p: Proposal, probe: Probe) -> Minimal:
        """The failure shrunk: a family level knob by knob, a written file by the designer's model (when it has one)."""
        cand = p.candidate

        async def judge(source: str, hint: str | None, params: Params | None) -> tuple[Probe, bool]:
            tried = await self.prober.probe(source, hint, params=params)
            return tried, self.prober.fails(tried)

        if cand.family and self.config.minimise:
            minimal = await shrink_level(cand.family, cand.knobs, probe, judge,
                                         lambda knobs: self.memory.known_cluster(cand.family, knobs))
            for step in minimal.steps:  # a simpler level the target won is remembered as won
                if step["won"] and self.prober.won(step["win_rate"]):
                    await self.remember_win(cand.family, step["level"])
            return minimal
        if isinstance(self.designer, ModelDesigner) and self.config.minimise and self.config.simplify_turns:
            client = self.designer.chat_client()
            try:
                return await simplify_file(cand.source, cand.hint, probe, judge, client, self.config.simplify_turns)
            finally:
                await client.aclose()
        size = level_size(cand.family, cand.knobs) if cand.family else code_size(cand.source)
        return Minimal(cand.source, dict(cand.knobs), probe, size=size)

    async def confirm_case(self, p: Proposal, minimal: Minimal, key: str, pattern: str) -> Minimal | None:
        """Replay ``minimal`` on fresh seeds, then settle its cause; a real failure becomes a case (or, settled onto
        a known cluster's form, joins it). Returns the form kept, None when the replays refuse it."""
        cfg, cand = self.config, p.candidate
        check = await self.replay(minimal.source, cand.hint, key,
                                  Params(cand.family, minimal.knobs) if cand.family else None)
        if not check.kept:
            return None
        minimal, check = await self.settle(p, minimal, check)
        family = cand.family
        pattern = failure_pattern(minimal.probe.episodes)
        key = cluster_key(family, minimal.knobs, minimal.source, pattern)
        if self.memory.novelty(key) < 1.0:
            return minimal  # its cause is a failure found before
        stats = minimal.probe.stats
        case = Case(
            id=f"c{len(self.cases) + 1:03d}-{family or 'written'}", file="", skill=cand.skill,
            seeds=check.case_seeds(cfg.case_seeds), family=family, knobs=dict(minimal.knobs),
            original_knobs=dict(cand.knobs), size=minimal.size,
            original_size=level_size(family, cand.knobs) if family else code_size(cand.source),
            cluster=key, failure_pattern=pattern, failure_rate=round(check.failure_rate, 4),
            failure_interval=list(check.interval), failure_plays=check.plays,
            solution_return=stats.oracle_return if stats else None,
            hint_win_rate=stats.win_rate_hint if stats and stats.plays_hint else None,
            transcript=transcript(minimal.probe), hint=cand.hint,
            minimise_steps=len(minimal.steps), shrink_steps=list(minimal.steps),
        )
        self.cases.append(FoundCase(case, minimal.source, cand.source))
        return minimal

    async def replay(self, source: str, hint: str | None, key: str, params: Params | None = None) -> Confirmation:
        """``source`` replayed on fresh seeds; ``params``: the family and knobs that rendered it, if they did."""
        cfg = self.config
        return await confirm(self.prober, source, hint, key=key, seeds=cfg.confirm_seeds, plays=cfg.confirm_plays,
                             min_failure_rate=cfg.min_failure_rate, params=params)

    async def settle(self, p: Proposal, form: Minimal, check: Confirmation) -> tuple[Minimal, Confirmation]:
        """Keep a confirmed family level's cause: while a level just below it (a knob one value easier, a
        variation undone) fails its own fresh seeds as well, the failure is that simpler level's, and the walk
        goes on from there. The form kept fails its replays and none of the levels just below it does, so
        the change between them is what it needs; on the shrink's four hunt seeds a target that loses a
        level now and then can win one by chance and leave a variation in a form that does not need it.

        A level below that repeats a known failure is no such evidence (it fails for the known cause); the
        won levels that set this form apart from that failure are replayed instead, and one that fails its
        fresh seeds is forgotten as a lucky win, so the form falls back into the known failure's cluster."""
        family = p.candidate.family
        while family:
            if (known := await self.known_after_replaying_wins(family, form.knobs)) is not None:
                fam, knobs = self.memory.minimal[known]
                return Minimal(get_family(fam).render(knobs), dict(knobs), form.probe, form.steps,
                               level_size(fam, knobs)), check
            for simpler in one_step_simpler(family, form.knobs):
                if self.memory.known_cluster(family, simpler) is not None:
                    continue
                source = get_family(family).render(simpler)
                below = await self.replay(source, None, cluster_key(family, simpler, source, ""), Params(family, simpler))
                changed = {k: v for k, v in simpler.items() if form.knobs.get(k) != v}
                form.steps.append({"settle": changed, "still_fails": below.kept, "failure_rate": below.failure_rate,
                                   "level": simpler})
                if below.kept and below.probe is not None:
                    form, check = Minimal(source, simpler, below.probe, form.steps, level_size(family, simpler)), below
                    break
            else:
                break
        return form, check

    # -- won levels ------------------------------------------------------------------
    async def remember_win(self, family: str | None, knobs: dict[str, Any]) -> None:
        """A won level joins the memory's won levels; one strictly above a known failure would reopen the
        levels above it to the search, so it is replayed on fresh seeds first and forgotten if it fails
        there (a lucky win on the hunt's seeds, which would only send proposals back to that failure)."""
        if family and self.memory.above_failure(family, knobs) and not await self.win_holds(family, knobs):
            return
        self.memory.add_pass(family, knobs)

    async def win_holds(self, family: str, knobs: dict[str, Any]) -> bool:
        """Whether a level the target won is won on fresh seeds too (replayed once; the answer is kept)."""
        source = get_family(family).render(knobs)
        key = cluster_key(family, knobs, source, "")
        if key not in self.won_replayed:
            self.won_replayed[key] = not (await self.replay(source, None, "won:" + key, Params(family, knobs))).kept
        return self.won_replayed[key]

    async def known_after_replaying_wins(self, family: str, knobs: dict[str, Any]) -> str | None:
        """Replay the won levels between this level and the known failures below it on fresh seeds, forget
        those that fail there, and return the known failure the level repeats once they are gone (or None)."""
        for won in self.memory.won_between(family, knobs):
            if not await self.win_holds(family, won):
                self.memory.forget_pass(family, won)
        return self.memory.known_cluster(family, knobs)


def transcript(probe: Probe, limit: int = TRANSCRIPT_CHARS) -> str:
    """The target's first lost no-hint episode, turn by turn, cut to ``limit`` characters."""
    lost = next((e for e in probe.episodes if not e.hinted and e.scored and not e.success), None)
    if lost is None:
        return ""
    lines = [f"seed {lost.seed}: return {lost.ret:g} after {len(lost.turns)} turns"]
    for i, turn in enumerate(lost.turns):
        shown = " | ".join(line for line in turn.observation.splitlines()[:6] if line.strip())
        lines.append(f"[{i + 1}] {shown}\n    -> {turn.action!r}")
    lines.append(f"end: {' | '.join(lost.final_observation.splitlines()[:3])}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 3] + "..."
