"""One red-team round: the self-play round's parts turned against a frozen agent.

One round, as the algorithm reads:

    allocate   a learning designer's slots go to the skills whose proposals yielded failures
               (``YieldAllocator``: Thompson sampling); a baseline's are shared evenly (``fresh_slots``)
    propose    the designer proposes levels for those skills (rewarded for earlier failures)
    judge      each goes through the loop's ``Judge`` (no code, or code judged before: refused without
               a gate call), then the target plays it (``Prober``): failed and solvable? Each is
               judged, and filed as below, before the next: one that would repeat a failure found
               earlier in the round is asked for again, and so is one kept from a known failure only
               by a won level whose win its fresh seeds refute
    file       a failure is clustered, shrunk and confirmed (``confirmation.Confirmer``); a won level
               joins the memory's won levels (one strictly above a known failure only once its fresh
               seeds confirm the win, since it reopens the levels above that failure)
    reward     failure rate x feasibility, x (1 + novelty / (1 + failures already in the cluster)),
               centred per skill, invalid proposals below any valid one (``told``) -> the designer learns
    remember   the level buffer keeps scored levels; those the target lost at least once (outside a
               filled cluster) are the designer's parents, which it climbs; every play of a family
               level (proposal, shrink step, replay) feeds the search's model of the target
               (``PlayModel``); the store keeps the round (``RunStore.write_round``)

Rule: the designer earns reward only for solvable levels the target fails, and
less for a bug it has already found, so the search spreads over distinct failures.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..agents.base import Agent
from ..curriculum import BufferConfig, BufferState, LevelBuffer, LevelRecord
from ..designers.base import (
    Candidate,
    DesignContext,
    Designer,
    Level,
    LevelSummary,
    abilities,
    random_state,
    set_random_state,
)
from ..designers.judge import Judge, Proposal
from ..designers.round import fresh_slots, level_summary, told
from ..envfile import normalized_code_hash
from ..executor import Executor
from ..families import level_family
from ..rollout import derive_seed
from ..signals import EnvStats, bands, get_designer_reward
from ..store import RunStore
from ..store.record import RoundRecord
from .allocate import PARTIAL_YIELD, YieldAllocator
from .clusters import ClusterMemory
from .config import RedTeamConfig
from .confirmation import Confirmer
from .predict import Played, PlayModel
from .probe import Probe, Prober
from .suite import FoundCase, case_of


@dataclass
class Trial:
    """A judged proposal (the judge's ``Proposal``) and what the search made of it: the target's plays,
    the failure cluster it joined, and the reward it earned."""

    proposal: Proposal
    probe: Probe  # the gate's verdict and the target's plays (none for a refused proposal)
    cluster: str | None = None
    new_cluster: bool = False
    reward: float = 0.0

    @property
    def candidate(self) -> Candidate:
        return self.proposal.candidate

    @property
    def valid(self) -> bool:
        return self.proposal.valid

    @property
    def env_id(self) -> str | None:
        return self.proposal.env_id

    def found(self, max_win_rate: float) -> float:
        """What the proposal yielded, for the allocator: a new failure 1, some lost plays one half."""
        stats = self.probe.stats
        if self.new_cluster:
            return 1.0
        lost_some = stats is not None and self.cluster is None and stats.win_rate < 1 and stats.plays > 0
        return PARTIAL_YIELD if lost_some and stats.win_rate > max_win_rate else 0.0


@dataclass
class SearchRound:
    """A red-team round's figures, as the console line and the store read them."""

    round: int
    proposals: int
    valid: int
    failed: int  # proposals that joined a cluster
    clusters: int
    cases: int
    seconds: float
    validations: int  # gate calls so far
    episodes: int  # target plays so far
    avoided: int  # proposals asked for again because they repeated a known failure (so far)
    episode_failures: dict[str, int] = field(default_factory=dict)
    unscored: int = 0
    unscored_because: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RedTeam:
    """Owns a search: the designer, the prober (gate + frozen target), the confirmation step, the buffer."""

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
        self.confirmer = Confirmer(config, self.prober, self.memory, designer)
        self.proposals = 0
        self.failures = 0  # failed, solvable levels found (every cluster, repeats included)
        self.avoided = 0  # proposals replaced before judging because they repeated a known failure
        self.next_round = 0
        self.empty = 0  # rounds in a row that brought no proposal
        # Only a designer that learns also steers the budget; a baseline's slots are shared evenly.
        adaptive = config.allocate == "yield" and abilities(designer).learns
        self.allocator = YieldAllocator(config.skills, seed=config.seed) if adaptive else None

    @property
    def cases(self) -> list[FoundCase]:
        """The cases confirmed so far, with their files."""
        return self.confirmer.cases

    def played(self, level: Level, stats: EnvStats) -> None:
        """A family level's plays (a proposal's, a shrink step's, a replay's) into the model of the target: its
        family and knobs from its typed params (``level_family``; a file that carries none, from its text)."""
        if (found := level_family(level)) is not None:
            self.model.observe(*found, stats.win_rate * stats.plays, stats.plays)

    # -- one round ------------------------------------------------------------
    async def round(self, n: int, count: int) -> dict[str, Any]:
        started = time.perf_counter()
        skills = self.config.skills
        trials: list[Trial] = []
        judge = Judge(known=self.buffer.duplicate_of)  # a file judged before (in the buffer or this round) is a duplicate
        slots = self.allocator.slots(count) if self.allocator else fresh_slots(n, count, len(skills), len(skills))
        for skill, k in zip(skills, slots):
            if k:
                context = self.context(n, skill, k)
                cands = list(await self.designer.propose(context))
                if self.allocator and len(cands) < k:  # the designer has nothing new left for this skill
                    self.allocator.exhaust(skill)
                # Each proposal is judged and filed before the next is judged, so one that would repeat a
                # failure found earlier in the round is asked for again, not spent.
                for cand in cands:
                    cand = await self.replace_known(cand, context)
                    trial = await self.judge(judge, f"r{n:03d}-{len(trials):02d}", cand)
                    await self.file(trial)
                    trials.append(trial)
        self.proposals += len(trials)
        self.reward_designer(trials)
        self.remember(n, trials)
        if self.allocator:
            for t in trials:
                self.allocator.record(t.candidate.skill, t.found(self.config.max_win_rate))
        summary = SearchRound(
            round=n, proposals=len(trials), valid=sum(t.valid for t in trials),
            failed=sum(t.cluster is not None for t in trials), clusters=len(self.memory), cases=len(self.cases),
            seconds=round(time.perf_counter() - started, 3), validations=self.prober.validations,
            episodes=self.prober.episodes, avoided=self.avoided, **unscored(trials),
        )
        self.next_round, self.empty = n + 1, (self.empty + 1 if not trials else 0)
        if self.store is not None:
            self.store.write_round(self.record(n, trials, summary))
        return summary.to_dict()

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
                known = await self.confirmer.known_after_replaying_wins(cand.family, cand.knobs)
            else:
                code_hash = normalized_code_hash(cand.source) if cand.source else ""
                known = self.memory.known_cluster(cand.family, cand.knobs, code_hash)
            if known is None:
                break
            self.avoided += 1
            again = list(await self.designer.propose(replace(context, count=1)))
            if not again:
                break
            cand = again[0]
        return cand

    async def judge(self, judge: Judge, name: str, cand: Candidate) -> Trial:
        """The loop's judge (the gate asked only for a file with code not judged before), then the target's plays."""
        p = judge(cand, name, gate=lambda c, _name: self.prober.gate(c.source, c.hint))
        verdict = None if p.verdict is None else p.verdict.to_dict()
        if not p.valid:
            return Trial(p, Probe(cand.source, False, verdict, p.refusal))
        return Trial(p, await self.prober.probe(cand.source, cand.hint, verdict=verdict, params=cand.level.params))

    async def file(self, t: Trial) -> None:
        """A judged proposal into the memory: a failure into its cluster (shrunk and confirmed when new), a
        won level into the won ones; and its reward."""
        if self.prober.fails(t.probe):
            self.failures += 1
            known = len(self.memory)
            t.cluster, novelty = await self.confirmer.cluster(t.proposal, t.probe)
            t.new_cluster = len(self.memory) > known
            t.reward = self.reward_fn(t.probe.stats) * (1 + self.config.novelty * novelty)
        elif t.probe.stats is not None:
            t.reward = self.reward_fn(t.probe.stats)
            if self.prober.won(t.probe.stats.win_rate):
                await self.confirmer.remember_win(t.candidate.family, t.candidate.knobs)

    # -- reward and memory ---------------------------------------------------------
    def reward_designer(self, trials: list[Trial]) -> None:
        """The loop's feedback (``told``): a played level's reward centred within its skill, with its cluster
        and what it found (a new failure 1, lost only some plays 1/2: the search designer learns its ways from it)."""
        played = [t for t in trials if t.valid and t.env_id and t.probe.stats is not None]
        feedback = told([t.proposal for t in trials], {t.env_id: t.reward for t in played},
                        {t.env_id: t.probe.stats for t in played},
                        {t.env_id: {"cluster": t.cluster, "found": t.found(self.config.max_win_rate)} for t in played})
        if abilities(self.designer).learns:  # the baselines do not learn
            self.designer.update(feedback)  # type: ignore[attr-defined]

    def remember(self, n: int, trials: list[Trial]) -> None:
        for t in trials:
            if not (t.valid and t.env_id and t.probe.stats):
                continue
            s = t.probe.stats
            self.buffer.add(LevelRecord.of(t.env_id, t.candidate.level, n), t.candidate.level)
            self.buffer.record_play(t.env_id, n, t.reward, s.win_rate, s.win_rate_hint, s.regret)

    def record(self, n: int, trials: list[Trial], summary: SearchRound) -> RoundRecord:
        """The round as the store writes it: every proposal; each accepted level with its plays, the failure it
        joined and, where it was scored, its statistics and reward; the search's state to resume from."""
        accepted = [t for t in trials if t.env_id]
        scored = [t for t in accepted if t.probe.stats is not None]
        return RoundRecord(
            n, proposals=[t.proposal for t in trials],
            episodes=[replace(e, env_id=t.env_id) for t in accepted for e in t.probe.episodes],
            stats={t.env_id: t.probe.stats for t in scored}, rewards={t.env_id: t.reward for t in scored},
            clusters={t.env_id: t.cluster for t in accepted}, states={"redteam": self.state_dict()}, summary=summary)

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
        memory, allocator, confirmer = self.memory, self.allocator, self.confirmer
        return {
            "next_round": self.next_round, "empty": self.empty, "proposals": self.proposals,
            "failures": self.failures, "avoided": self.avoided, "refused": sorted(confirmer.refused),
            "won_replayed": dict(confirmer.won_replayed), "clusters": dict(memory.counts),
            "memory": {"minimal": {k: [f, knobs] for k, (f, knobs) in memory.minimal.items()},
                       "written": dict(memory.written), "passes": [[f, knobs] for f, knobs in memory.passes]},
            "model": {f: [[r.features.tolist(), r.wins, r.plays] for r in rows] for f, rows in self.model.played.items()},
            "cases": [[c.case.to_dict(), c.minimal, c.original] for c in self.cases],
            "allocator": None if allocator is None else {
                "counts": allocator.state(), "exhausted": sorted(allocator.exhausted),
                "rng": random_state(allocator.rng)},
            "designer": self.designer.state_dict(), "buffer": self.buffer.state.to_dict(),
            "prober": {"validations": self.prober.validations, "episodes": self.prober.episodes},
        }

    def load_state_dict(self, state: dict[str, Any], store: RunStore) -> None:
        """Put back what ``state_dict`` saved (the levels the buffer held come from ``store``)."""
        confirmer = self.confirmer
        self.next_round, self.empty = int(state.get("next_round", 0)), int(state.get("empty", 0))
        self.proposals, self.failures = int(state.get("proposals", 0)), int(state.get("failures", 0))
        self.avoided, confirmer.refused = int(state.get("avoided", 0)), set(state.get("refused", []))
        confirmer.won_replayed = dict(state.get("won_replayed", {}))
        memory = state.get("memory", {})
        self.memory.counts.update(state.get("clusters", {}))
        self.memory.minimal.update({k: (f, dict(knobs)) for k, (f, knobs) in memory.get("minimal", {}).items()})
        self.memory.written.update(memory.get("written", {}))
        self.memory.passes.extend((f, dict(knobs)) for f, knobs in memory.get("passes", []))
        for family, rows in state.get("model", {}).items():
            self.model.played[family] = [Played(np.array(x, dtype=float), float(wins), int(plays)) for x, wins, plays in rows]
        confirmer.cases[:] = [FoundCase(case_of(case), minimal, original)
                              for case, minimal, original in state.get("cases", [])]
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


def unscored(trials: list[Trial]) -> dict[str, Any]:
    """The round's episode failures by kind, and the played levels none of whose plays scored: an agent failure
    (a reply error, a context overflow) is the harness's, not the level's, so such a level can never count as
    failed, and a search whose target fails that way spends its budget finding nothing."""
    episodes = [e for t in trials for e in t.probe.episodes]
    lost = [t for t in trials if t.valid and t.probe.episodes and not (t.probe.stats and t.probe.stats.plays)]
    first = next((e.failure_message for t in lost for e in t.probe.episodes if e.failure_message), None)
    return {"episode_failures": dict(Counter(e.failure for e in episodes if e.failure)),
            "unscored": len(lost), "unscored_because": first}
