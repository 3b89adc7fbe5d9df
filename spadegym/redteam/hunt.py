"""Red-teaming: the self-play loop turned against a frozen agent.

One round, as the algorithm reads:

    allocate   a learning designer's slots go to the skills whose proposals yielded failures
               (``YieldAllocator``: Thompson sampling); a baseline's are shared evenly
    propose    the designer proposes levels for those skills (rewarded for earlier failures)
    judge      each passes the gate, then the target plays it (``Prober``): failed and solvable?
               Each is judged, and filed as below, before the next: one that would repeat a
               failure found earlier in the round is asked for again, and so is one kept from a
               known failure only by a won level whose win its fresh seeds refute
    cluster    a failure that dominates a known minimal failure joins its cluster; a new one is
               shrunk to its minimal form (``minimise``), which names its cluster
    confirm    a new cluster's minimal form is replayed on fresh seeds; a real failure becomes a case
               (a form refused gives way to the less shrunk ones of its shrink path; a failure
               with no confirmed form is counted but marks no region of its family as known)
    reward     failure rate x feasibility, x (1 + novelty / (1 + failures already in the cluster)),
               centred per skill, invalid proposals below any valid one -> the designer learns
    remember   a won level joins the memory's won levels (one strictly above a known failure only
               once its fresh seeds confirm the win, since it reopens the levels above that failure);
               the level buffer keeps scored levels; those the target lost at least once (outside
               a filled cluster) are the designer's parents, which it climbs; every play of a family
               level (proposal, shrink step, replay) feeds the search's model of the target
               (``PlayModel``); the store keeps everything

Rule: the designer earns reward only for solvable levels the target fails, and
less for a bug it has already found, so the search spreads over distinct failures.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.base import Agent
from ..curriculum import BufferConfig, BufferState, LevelBuffer, LevelRecord
from ..designers.base import (
    Candidate,
    DesignContext,
    Designer,
    LevelSummary,
    ModelDesigner,
    abilities,
    random_state,
    set_random_state,
)
from ..envfile import normalized_code_hash
from ..errors import UserError
from ..executor import Executor, make_executor
from ..families import get_family, rendered_level
from ..loop.run import versions
from ..loop.selfplay import fresh_slots, level_summary
from ..loop.steps import told
from ..rollout import derive_seed
from ..safety import is_safety_key, leaves
from ..signals import EnvStats, bands, get_designer_reward
from ..store import RunStore
from .allocate import PARTIAL_YIELD, YieldAllocator
from .clusters import ClusterMemory, cluster_key, failure_pattern
from .config import SEARCH_DESIGNERS, RedTeamConfig
from .flakiness import Confirmation, confirm
from .minimise import Minimal, code_size, level_size, one_step_simpler, shrink_level, simplify_file
from .predict import Judging, PlayModel
from .probe import Probe, Prober
from .search import SearchDesigner
from .space import SearchSpace, UniformDesigner
from .suite import Case, case_of, check_cases_folder, write_suite

HUNT_DIR = "hunt"  # the search's run store, inside the suite directory (not part of the suite's checksums)
TRANSCRIPT_CHARS = 1200


@dataclass
class Proposal:
    candidate: Candidate
    probe: Probe
    code_hash: str
    env_id: str | None = None
    cluster: str | None = None
    new_cluster: bool = False
    reward: float = 0.0

    @property
    def name(self) -> str | None:
        return self.env_id

    @property
    def valid(self) -> bool:
        return self.probe.valid

    @property
    def refusal(self) -> str | None:
        return None if self.probe.valid else self.probe.reason

    def found(self, max_win_rate: float) -> float:
        """What the proposal yielded, for the allocator: a new failure 1, some lost plays one half."""
        stats = self.probe.stats
        if self.new_cluster:
            return 1.0
        lost_some = stats is not None and self.cluster is None and stats.win_rate < 1 and stats.plays > 0
        return PARTIAL_YIELD if lost_some and stats.win_rate > max_win_rate else 0.0


@dataclass
class RedTeamResult:
    suite: Path
    cases: int
    clusters: int
    proposals: int
    failures: int
    summaries: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"suite": str(self.suite), "cases": self.cases, "clusters": self.clusters,
                "proposals": self.proposals, "failures": self.failures}


class RedTeam:
    """Owns a search: the designer, the prober (gate + frozen target), the cluster memory, the cases."""

    def __init__(self, config: RedTeamConfig, executor: Executor, target: Agent, designer: Designer,
                 store: RunStore | None = None, memory: ClusterMemory | None = None, model: PlayModel | None = None):
        self.config, self.target, self.designer, self.store = config, target, designer, store
        self.reward_fn = get_designer_reward(config.reward)
        self.prober = Prober(executor, target, seed=config.seed, plays=config.plays, hint_plays=config.hint_plays,
                             max_win_rate=config.max_win_rate, min_feasibility=config.min_feasibility,
                             rollout=config.rollout, validation=config.validation, won_at=config.won_at,
                             on_played=self.played)
        self.buffer = LevelBuffer(BufferConfig(capacity=max(256, config.budget)))
        self.memory = memory if memory is not None else ClusterMemory()  # the search designer reads it too
        self.model = model if model is not None else PlayModel()  # so does the model of the target's plays
        self.cases: list[tuple[Case, str, str]] = []
        self.proposals = 0
        self.failures = 0  # failed, solvable levels found (every cluster, repeats included)
        self.avoided = 0  # proposals replaced before judging because they repeated a known failure
        self.refused: set[str] = set()  # clusters whose forms failed their fresh seeds only by chance
        self.won_replayed: dict[str, bool] = {}  # won levels replayed on fresh seeds -> won there too
        self.next_round = 0
        self.empty = 0  # rounds in a row that brought no proposal
        # Only a designer that learns also steers the budget; a baseline's slots are shared evenly.
        adaptive = config.allocate == "yield" and abilities(designer).learns
        self.allocator = YieldAllocator(config.skills, seed=config.seed) if adaptive else None

    def played(self, source: str, stats: EnvStats) -> None:
        """A family level's plays (a proposal's, a shrink step's, a replay's) into the model of the target."""
        if (level := rendered_level(source)) is not None:
            self.model.observe(*level, stats.win_rate * stats.plays, stats.plays)

    # -- one round ------------------------------------------------------------
    async def round(self, n: int, count: int) -> dict[str, Any]:
        started = time.perf_counter()
        skills = self.config.skills
        props: list[Proposal] = []
        slots = self.allocator.slots(count) if self.allocator else fresh_slots(n, count, len(skills), len(skills))
        for skill, k in zip(skills, slots):
            if k:
                context = self.context(n, skill, k)
                cands = await _propose(self.designer, context)
                if self.allocator and len(cands) < k:  # the designer has nothing new left for this skill
                    self.allocator.exhaust(skill)
                # Each proposal is judged and filed before the next is judged, so one that would repeat a
                # failure found earlier in the round is asked for again, not spent.
                for cand in cands:
                    cand = await self.replace_known(cand, context)
                    p = await self.judge(n, len(props), cand, {p.code_hash for p in props})
                    await self.file(p)
                    props.append(p)
        self.proposals += len(props)
        self.reward_designer(props)
        self.remember(n, props)
        if self.allocator:
            for p in props:
                self.allocator.record(p.candidate.skill, p.found(self.config.max_win_rate))
        summary = {
            "round": n, "proposals": len(props), "valid": sum(p.probe.valid for p in props),
            "failed": sum(p.cluster is not None for p in props), "clusters": len(self.memory),
            "cases": len(self.cases), "seconds": round(time.perf_counter() - started, 3),
            "validations": self.prober.validations, "episodes": self.prober.episodes, "avoided": self.avoided,
            **unscored(props),
        }
        self.next_round, self.empty = n + 1, (self.empty + 1 if not props else 0)
        self.write(n, props, summary)
        return summary

    def context(self, n: int, skill: str, count: int) -> DesignContext:
        """The buffer's picture of one skill: the levels closest to failing (most reward) rank first as parents."""
        def summary(r: LevelRecord) -> LevelSummary:
            return level_summary(self.buffer, r)

        # Levels in a filled cluster are no parents: every edit of them that still fails repeats that failure.
        ranked = [r for r in self.buffer.ranked(skill)
                  if self.memory.known_cluster(r.family, r.knobs, r.code_hash) is None]
        return DesignContext(
            skill=skill, count=count, round=n, seed=derive_seed(self.config.seed, "redteam", n, skill),
            frontier=[summary(r) for r in ranked if r.win_rate <= self.config.max_win_rate][:8],
            mastered=[summary(r) for r in ranked if r.win_rate > bands.MASTERED][:4],
            # Only levels the target lost at least once are edited (mutation toward failing regions): an
            # edit of a level it wins every time is a near copy of a pass, where a fresh draw explores.
            parents=[summary(r) for r in ranked if r.score > 0][:16],
        )

    async def replace_known(self, cand: Candidate, context: DesignContext, attempts: int = 8) -> Candidate:
        """With ``avoid_known``, a candidate that repeats a known failure is asked for again (up to ``attempts``
        times; the last answer is judged). A family level kept from a known failure below it only by won levels
        in between has those wins replayed on fresh seeds first: a lucky win would let it repeat that failure."""
        for _ in range(attempts if self.config.avoid_known else 0):
            if cand.family:
                known = await self.known_after_replaying_wins(cand.family, cand.knobs)
            else:
                code_hash = normalized_code_hash(cand.source) if cand.source else ""
                known = self.memory.known_cluster(cand.family, cand.knobs, code_hash)
            if known is None:
                break
            self.avoided += 1
            again = await _propose(self.designer, replace(context, count=1))
            if not again:
                break
            cand = again[0]
        return cand

    async def file(self, p: Proposal) -> None:
        """A judged proposal into the memory: a failure into its cluster (shrunk and confirmed when new), a
        won level into the won ones; and its reward."""
        if self.prober.fails(p.probe):
            self.failures += 1
            known = len(self.memory)
            p.cluster, novelty = await self.cluster(p)
            p.new_cluster = len(self.memory) > known
            p.reward = self.reward_fn(p.probe.stats) * (1 + self.config.novelty * novelty)
        elif p.probe.stats is not None:
            p.reward = self.reward_fn(p.probe.stats)
            if self.prober.won(p.probe.stats.win_rate):
                await self.remember_win(p.candidate.family, p.candidate.knobs)

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
            self.won_replayed[key] = not (await self.replay(source, None, "won:" + key)).kept
        return self.won_replayed[key]

    async def judge(self, n: int, i: int, cand: Candidate, earlier: set[str] | None = None) -> Proposal:
        """Gate and target plays; a file already judged (in an earlier round or this one) is a duplicate."""
        code_hash = normalized_code_hash(cand.source) if cand.source else ""
        if code_hash and (self.buffer.duplicate_of(code_hash) or code_hash in (earlier or ())):
            probe = Probe(cand.source, False, None, "duplicate")
        elif not cand.source:
            verdict = cand.verdict.to_dict() if cand.verdict is not None else None
            probe = Probe("", False, verdict, cand.refusal or "no_code")
        else:
            verdict = cand.verdict.to_dict() if cand.verdict is not None else None
            probe = await self.prober.probe(cand.source, cand.hint, verdict=verdict)
        env_id = f"r{n:03d}-{i:02d}" if probe.valid else None
        return Proposal(cand, probe, code_hash, env_id)

    # -- cluster, shrink, confirm ----------------------------------------------
    async def cluster(self, p: Proposal) -> tuple[str, float]:
        """The failure's cluster and its novelty; a new cluster's minimal form is confirmed as a case."""
        cand = p.candidate
        known = self.memory.known_cluster(cand.family, cand.knobs, p.code_hash)
        if known is not None:
            novelty = self.memory.novelty(known)
            self.memory.add(known)
            return known, novelty
        minimal = await self.minimise(p)
        kept, tries, confirmed = minimal, 0, False
        # A form that fails its fresh seeds only by chance is no case; a less shrunk one on the
        # shrink path may fail for real (a graded weakness shrinks past its edge on 4 hunt seeds).
        async for form in self.shrink_path(p, minimal):
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

    async def shrink_path(self, p: Proposal, minimal: Minimal) -> AsyncIterator[Minimal]:
        """The minimal form, then each less shrunk form that still failed, back to the level first found."""
        yield minimal
        cand = p.candidate
        if cand.family:
            family = get_family(cand.family)
            accepted = [step["level"] for step in minimal.steps if step.get("still_fails")]
            for knobs in reversed(accepted[:-1]):
                source = family.render(knobs)
                probe = await self.prober.probe(source, None)
                yield Minimal(source, dict(knobs), probe, minimal.steps, level_size(cand.family, knobs))
        if cand.source != minimal.source:
            size = level_size(cand.family, cand.knobs) if cand.family else code_size(cand.source)
            yield Minimal(cand.source, dict(cand.knobs), p.probe, minimal.steps, size)

    async def minimise(self, p: Proposal) -> Minimal:
        cand, probe = p.candidate, p.probe

        async def judge(source: str, hint: str | None) -> tuple[Probe, bool]:
            tried = await self.prober.probe(source, hint)
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
        check = await self.replay(minimal.source, cand.hint, key)
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
        self.cases.append((case, minimal.source, cand.source))
        return minimal

    async def replay(self, source: str, hint: str | None, key: str) -> Confirmation:
        cfg = self.config
        return await confirm(self.prober, source, hint, key=key, seeds=cfg.confirm_seeds, plays=cfg.confirm_plays,
                             min_failure_rate=cfg.min_failure_rate)

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
                below = await self.replay(source, None, cluster_key(family, simpler, source, ""))
                changed = {k: v for k, v in simpler.items() if form.knobs.get(k) != v}
                form.steps.append({"settle": changed, "still_fails": below.kept, "failure_rate": below.failure_rate,
                                   "level": simpler})
                if below.kept and below.probe is not None:
                    form, check = Minimal(source, simpler, below.probe, form.steps, level_size(family, simpler)), below
                    break
            else:
                break
        return form, check

    async def known_after_replaying_wins(self, family: str, knobs: dict[str, Any]) -> str | None:
        """Replay the won levels between this level and the known failures below it on fresh seeds, forget
        those that fail there, and return the known failure the level repeats once they are gone (or None)."""
        for won in self.memory.won_between(family, knobs):
            if not await self.win_holds(family, won):
                self.memory.forget_pass(family, won)
        return self.memory.known_cluster(family, knobs)

    # -- reward and memory ---------------------------------------------------------
    def reward_designer(self, props: list[Proposal]) -> None:
        """The loop's feedback (``steps.told``): a played level's reward centred within its skill, with its cluster
        and what it found (a new failure 1, lost only some plays 1/2: the search designer learns its ways from it)."""
        played = [p for p in props if p.valid and p.env_id and p.probe.stats is not None]
        feedback = told(props, {p.env_id: p.reward for p in played}, {p.env_id: p.probe.stats for p in played},
                        {p.env_id: {"cluster": p.cluster, "found": p.found(self.config.max_win_rate)} for p in played})
        if abilities(self.designer).learns:  # the baselines do not learn
            self.designer.update(feedback)  # type: ignore[attr-defined]

    def remember(self, n: int, props: list[Proposal]) -> None:
        for p in props:
            if not (p.probe.valid and p.env_id and p.probe.stats):
                continue
            s = p.probe.stats
            self.buffer.add(LevelRecord.of(p.env_id, p.candidate.level, n), p.candidate.level)
            self.buffer.record_play(p.env_id, n, p.reward, s.win_rate, s.win_rate_hint,
                                    s.mean_return_hint - s.mean_return)

    def write(self, n: int, props: list[Proposal], summary: dict[str, Any]) -> None:
        if self.store is None:
            return
        with self.store.round(n) as tx:
            for p in props:
                c = p.candidate
                tx.add_proposal(c.to_dict(), p.probe.verdict, p.env_id, p.probe.valid)
                if p.env_id:
                    tx.add_environment(p.env_id, c.level, {"cluster": p.cluster})
                    tx.add_episodes([{**e.to_dict(), "env_id": p.env_id, "round": n, "split": "train"}
                                     for e in p.probe.episodes])
                    s = p.probe.stats
                    if s is not None:
                        tx.add_scores([{"env_id": p.env_id, "win_rate": s.win_rate, "win_rate_hint": s.win_rate_hint,
                                        "regret": s.mean_return_hint - s.mean_return, "designer_reward": p.reward,
                                        "plays": s.plays, "plays_hint": s.plays_hint, "cluster": p.cluster}])
            tx.save_state("redteam", self.state_dict())
            tx.finish(summary)

    # -- the whole search ------------------------------------------------------------
    async def run(self, on_round: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """Rounds from ``next_round`` (0, or where a resumed search stopped) until the search is finished."""
        summaries = []
        while not self.finished():
            summary = await self.round(self.next_round,
                                       min(self.config.per_round, self.config.budget - self.proposals))
            summaries.append(summary)
            if on_round is not None:
                on_round(summary)
        return summaries

    def finished(self) -> bool:
        """The budget is spent; or a whole rotation of the skills' slots brought no proposal (a skill with nothing
        new left proposes nothing, the others take the budget): nothing is left to find; or the suite is full
        (what the search found next would not be kept)."""
        return (self.proposals >= self.config.budget or self.empty >= len(self.config.skills)
                or len(self.cases) >= self.config.max_cases)

    # -- resume --------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything the search knows, as plain JSON, saved with each round so that a stopped search resumes."""
        memory, allocator = self.memory, self.allocator
        return {
            "next_round": self.next_round, "empty": self.empty, "proposals": self.proposals,
            "failures": self.failures, "avoided": self.avoided, "refused": sorted(self.refused),
            "won_replayed": dict(self.won_replayed), "clusters": dict(memory.counts),
            "memory": {"minimal": {k: [f, knobs] for k, (f, knobs) in memory.minimal.items()},
                       "written": dict(memory.written), "passes": [[f, knobs] for f, knobs in memory.passes]},
            "model": {f: [[x.tolist(), wins, plays] for x, wins, plays in rows] for f, rows in self.model.played.items()},
            "cases": [[case.to_dict(), minimal, original] for case, minimal, original in self.cases],
            "allocator": None if allocator is None else {
                "counts": allocator.state(), "exhausted": sorted(allocator.exhausted),
                "rng": random_state(allocator.rng)},
            "designer": self.designer.state_dict(), "buffer": self.buffer.state.to_dict(),
            "prober": {"validations": self.prober.validations, "episodes": self.prober.episodes},
        }

    def load_state_dict(self, state: dict[str, Any], store: RunStore) -> None:
        """Put back what ``state_dict`` saved (the levels the buffer held come from ``store``)."""
        self.next_round, self.empty = int(state.get("next_round", 0)), int(state.get("empty", 0))
        self.proposals, self.failures = int(state.get("proposals", 0)), int(state.get("failures", 0))
        self.avoided, self.refused = int(state.get("avoided", 0)), set(state.get("refused", []))
        self.won_replayed = dict(state.get("won_replayed", {}))
        memory = state.get("memory", {})
        self.memory.counts.update(state.get("clusters", {}))
        self.memory.minimal.update({k: (f, dict(knobs)) for k, (f, knobs) in memory.get("minimal", {}).items()})
        self.memory.written.update(memory.get("written", {}))
        self.memory.passes.extend((f, dict(knobs)) for f, knobs in memory.get("passes", []))
        for family, rows in state.get("model", {}).items():
            self.model.played[family] = [(np.array(x, dtype=float), float(wins), int(plays)) for x, wins, plays in rows]
        self.cases = [(case_of(case), minimal, original) for case, minimal, original in state.get("cases", [])]
        if self.allocator is not None and state.get("allocator"):
            self.allocator.load(state["allocator"]["counts"])
            self.allocator.exhausted = set(state["allocator"]["exhausted"])
            set_random_state(self.allocator.rng, state["allocator"]["rng"])
        if state.get("designer"):
            self.designer.load_state_dict(state["designer"])
        if state.get("buffer"):
            self.buffer.state = BufferState.from_dict(state["buffer"])
            self.buffer.hold(store.levels(self.buffer.state.levels))
        prober = state.get("prober", {})
        self.prober.validations, self.prober.episodes = int(prober.get("validations", 0)), int(prober.get("episodes", 0))

    def suite_info(self) -> dict[str, Any]:
        cfg = self.config
        return {"target": str(cfg.target), "designer": str(cfg.designer), "seed": cfg.seed, "pass_at": cfg.pass_at,
                "reward": str(cfg.reward), "skills": cfg.skills, "families": cfg.families,
                "search": {"proposals": self.proposals, "failures": self.failures, "clusters": len(self.memory),
                           "validations": self.prober.validations, "episodes": self.prober.episodes,
                           "avoided": self.avoided, "cluster_failures": dict(self.memory.counts),
                           "allocation": self.allocator.state() if self.allocator else "even",
                           "finished": self.finished()}}


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


async def _propose(designer: Designer, context: DesignContext) -> list[Candidate]:
    """The designer's proposals (``Designer.propose`` is a coroutine)."""
    return list(await designer.propose(context))


def build_designer(config: RedTeamConfig, executor: Executor, memory: ClusterMemory,
                   model: PlayModel | None = None) -> Designer:
    """The search's designer; ``search`` and ``uniform`` draw from one space (``config.space``), and ``search``
    reads the search's memory of failures and won levels, and its model of the target's plays."""
    from ..designers.registry import DESIGNERS
    from ..loop.run import executor_validator

    if config.designer.kind in SEARCH_DESIGNERS:
        space = SearchSpace(config.space, config.families)
        if config.designer.kind == "uniform":
            return UniformDesigner(space, config.seed)
        judging = Judging(config.plays, config.max_win_rate, config.confirm_seeds * config.confirm_plays,
                          config.min_failure_rate)
        return SearchDesigner(space, memory, config.seed, model, judging)
    # Its kind's sections of the config; a designer that validates as it writes (the LLM one) validates where
    # the search does.
    kind = DESIGNERS.kind(config.designer)
    extra = {"validator": executor_validator(executor, config.validation)} if kind.takes("validator") else {}
    return DESIGNERS.make(config.designer, config.seed, **kind.from_config(config), **extra)


def build_target(config: RedTeamConfig) -> Agent:
    from ..agents.registry import AGENTS
    from ..store.learner_run import run_learner

    return AGENTS.make(run_learner(config.target), config.seed, **AGENTS.kind(config.target).from_config(config))


async def redteam_async(config: RedTeamConfig, out: str | Path,
                        on_round: Callable[[dict[str, Any]], None] | None = None,
                        resume: bool = False) -> RedTeamResult:
    """Search, writing the suite to ``out`` after every round and however the search stops (finished, interrupted,
    a model server gone), so what it confirmed is kept; ``resume`` continues the search stored in ``out/hunt``."""
    out = Path(out)
    store = open_search(config, out) if resume else new_search(config, out)
    with make_executor(config.executor, config.sandbox, config.ray) as executor, store:
        target = build_target(config)
        memory, model = ClusterMemory(), PlayModel()
        designer = build_designer(config, executor, memory, model)
        team = RedTeam(config, executor, target, designer, store, memory, model)
        if resume:
            team.load_state_dict(store.load_state("redteam") or {}, store)

        def keep(summary: dict[str, Any]) -> None:
            write_suite(out, team.cases, team.suite_info(), own_cases=True)
            if on_round is not None:
                on_round(summary)
        try:
            summaries = await team.run(keep)
        finally:
            write_suite(out, team.cases, team.suite_info(), own_cases=True)  # first: a second Ctrl-C loses nothing
            await target.aclose()
            if isinstance(designer, ModelDesigner):
                designer.close()
    return RedTeamResult(out, len(team.cases), len({c.cluster for c, _, _ in team.cases}), team.proposals,
                         team.failures, summaries)


def new_search(config: RedTeamConfig, out: Path) -> RunStore:
    """The store of a new search in ``out``, which must hold no suite and no search (a suite is never overwritten)."""
    if (out / HUNT_DIR).exists():
        raise UserError(f"{out} already holds a suite or a search; continue its search with the same command and "
                        "--resume (--budget N extends it), or choose a new --out (a suite is never overwritten).")
    if (out / "manifest.json").exists():
        raise UserError(f"{out} already holds a suite or a search; choose a new --out (a suite is never overwritten).")
    check_cases_folder(out)  # before the search: its cases would have nowhere of their own to go
    return RunStore.create(out / HUNT_DIR, config.model_dump(mode="json"), versions())


def open_search(config: RedTeamConfig, out: Path) -> RunStore:
    """The store of the search in ``out``, to go on with ``config``: the settings it began with, but for the safety
    settings (always the user's), the hosts of the target and the designer, and the budget (which may grow)."""
    if not (out / HUNT_DIR / "run.sqlite").is_file():
        raise UserError(f"{out} holds no search to resume ({HUNT_DIR}/run.sqlite is missing); start one with "
                        f"--out {out} without --resume.")
    check_cases_folder(out, own_cases=True)
    store = RunStore.open(out / HUNT_DIR)
    changed = changed_settings(store.config, config.model_dump(mode="json"))
    if changed:
        store.close()
        shown = ", ".join(repr(key) for key in changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
        raise UserError(f"{out} holds a search begun with other settings ({shown}); resume it with the settings it "
                        "began with (only the budget, the safety settings and the hosts may differ), or choose a "
                        "new --out.")
    return store


def changed_settings(stored: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """The settings of the experiment that differ between a stored search and the one given to resume it."""
    was, now = leaves(stored), leaves(given)
    return [key for key in sorted(set(was) | set(now))
            if key != "budget" and not is_safety_key(key) and _without_host(was.get(key)) != _without_host(now.get(key))]


def _without_host(value: Any) -> Any:
    """A model spec without its server (``openai:MODEL@URL`` -> ``openai:MODEL``): where it is served may change."""
    return value.partition("@")[0] if isinstance(value, str) and value.startswith("openai:") else value


def unscored(props: list[Proposal]) -> dict[str, Any]:
    """The round's episode failures by kind, and the played levels none of whose plays scored: an agent failure
    (a reply error, a context overflow) is the harness's, not the level's, so such a level can never count as
    failed, and a search whose target fails that way spends its budget finding nothing."""
    episodes = [e for p in props for e in p.probe.episodes]
    lost = [p for p in props if p.probe.valid and p.probe.episodes and not (p.probe.stats and p.probe.stats.plays)]
    first = next((e.failure_message for p in lost for e in p.probe.episodes if e.failure_message), None)
    return {"episode_failures": dict(Counter(e.failure for e in episodes if e.failure)),
            "unscored": len(lost), "unscored_because": first}


def redteam(config: RedTeamConfig, out: str | Path,
            on_round: Callable[[dict[str, Any]], None] | None = None, resume: bool = False) -> RedTeamResult:
    """Hunt the target's failures and write the regression suite to ``out`` (see the module docstring)."""
    import asyncio

    return asyncio.run(redteam_async(config, out, on_round, resume))
