"""The self-play loop: designer and agent co-evolve, one round at a time.

A round reads like the algorithm (``SelfPlay.round``):

    new levels   the designer proposes for this round's skills; the gate validates them
    replay       PLR picks stored levels by score and staleness (once the buffer is filled)
    play         the agent plays each chosen level G times without and H times with the hint
    score        returns -> win rates, hint regret, oracle regret -> designer reward
    learn        the agent learns from the plays; the designer from its rewards
    remember     the buffer keeps scored levels; everything goes to the store in one transaction

Rule of the curriculum: a level earns its designer reward from how the agent
does on it *now*, so the designer keeps proposing levels at the frontier.

An environment's life, in the words the code uses:

    level        one environment, the same value throughout (``Level``: a file or an OpenEnv server,
                 its hint, skill, params and lineage); the buffer holds the accepted ones, a host opens
                 them, the store writes them, each under its env id
    candidate    a level as a designer proposes it, with the designer's bookkeeping (``Candidate``)
    proposal     a candidate with the judge's verdict and refusal, if any (``Proposal``)
    record       what the buffer keeps of a level's plays and scores (``LevelRecord``)
    statistics   what one round of plays says about a level (``EnvStats``: win rates, regret)
    summary      what the designer is shown of a level (``LevelSummary``); a round's figures are a ``RoundSummary``
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..agents.base import Agent, Checkpointed, LearningAgent
from ..curriculum import BufferState, LevelBuffer, LevelRecord, learning_progress
from ..curriculum.diversity import PoolDiversity, transcript_text
from ..designers.base import Candidate, DesignContext, Designer, LearningDesigner, LevelSummary, abilities
from ..designers.judge import Judge, Proposal
from ..designers.round import fresh_slots, level_summary
from ..executor import Executor
from ..families import difficulty_index, list_families
from ..level import Level
from ..rollout import Episode, Play, derive_seed, run_episodes
from ..rollout.scoring import score
from ..signals import bands, get_designer_reward
from ..store import RunStore
from ..store.record import RoundRecord, RoundSummary
from ..train.sampled import total as sampled_tokens
from ..watch import Watch
from . import steps
from .callbacks import Heartbeat, PhaseProgress, ProgressMeter, progress_every
from .config import RunConfig
from .heldout import HeldoutEnv, build_suites, due_suites, evaluate, heldout_plays

SKILL_EMA_ALPHA = 0.1


@dataclass
class LoopState:
    """What the loop itself carries between rounds (saved with every round)."""

    next_round: int = 0
    elapsed_s: float = 0.0
    skill_ema: dict[str, float] = field(default_factory=dict)
    episodes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Clock:
    """Wall-clock seconds per named phase of a round (for the summary and the report)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 3)


@dataclass
class OpenRound:
    """A round between its two halves: chosen levels and slots, waiting for their plays (``SelfPlay.open_round``)."""

    record: RoundRecord
    levels: dict[str, Level]
    shares: dict[str, int]
    clock: _Clock
    started: float


class SelfPlay:
    """Owns the parts of a run and steps it round by round."""

    def __init__(self, config: RunConfig, store: RunStore, executor: Executor, designer: Designer, agent: Agent):
        self.config, self.store, self.executor = config, store, executor
        self.host = executor.host  # where levels are played: files in the sandbox, remote levels over OpenEnv
        self.designer, self.agent = designer, agent
        # What the parts can do is read here, once: an agent's from its protocol, a designer's from its abilities.
        self.learner: LearningAgent | None = agent if isinstance(agent, LearningAgent) else None
        self.learning_designer: LearningDesigner | None = (
            designer if abilities(designer).learns else None)  # type: ignore[assignment]
        #: The parts whose weights travel with each round (a policy that plays both roles once).
        self.checkpointed: list[Checkpointed] = list({id(p): p for p in (
            self.learner, designer if abilities(designer).checkpointed else None) if p is not None}.values())
        self.reward_fn = get_designer_reward(config.designer_reward)
        # The accepted levels, their scores and plays.
        self.buffer = LevelBuffer(config.buffer, similarity=self._pool_similarity)
        self.state = LoopState()
        self.diversity = PoolDiversity(first_play=self._first_play)  # n-grams of the pool's code and first plays
        self.watch = Watch(config.watch, config.seed)  # is the designer gaming its reward? (spadegym.watch)
        held = config.heldout
        # The built-in suites hold the families of the run's setting (games or tool use) unless named.
        families = held.families or [f.name for f in list_families(setting=config.setting)]
        self.suite: list[HeldoutEnv] = build_suites(held.suite_names(), levels=held.levels, families=families,
                                                    unseen=config.training_exclusions(), path=held.path)
        # The suites that hold levels (heldout.families may leave one empty), in the order asked for.
        self.suites = [name for name in held.suite_names() if any(h.suite == name for h in self.suite)]
        self.train_on_hint = config.train_on_hint if config.train_on_hint is not None else \
            bool(self.learner and self.learner.trains_on_hint)
        self._infra_seen: dict[str, int] = {}
        self.on_progress: Callable[[PhaseProgress], None] | None = None  # told as a round's work goes
        self.progress_every = progress_every()  # a phase that finishes nothing for this long still reports
        # Each round's plays and each held-out evaluation load their own workers, because a pool shared across
        # rounds makes the two evict each other's workers (more forks, not fewer).
        # One event loop for the whole run: LLM clients stay bound to the loop they started on.
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_on_interrupt)
        self._restore()

    def _await(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Release the agent's connections and the event loop (the tasks an interrupt left behind are cancelled)."""
        try:
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._await(asyncio.gather(*pending, return_exceptions=True))
            self._await(self.agent.aclose())
        finally:
            self._loop.close()

    # -- resume -------------------------------------------------------------
    def _restore(self) -> None:
        loop = self.store.load_state("loop")
        if loop is None:
            return
        self.state = LoopState(**loop)
        buffer = self.store.load_state("buffer")
        if buffer:
            self.buffer.state = BufferState.from_dict(buffer)
        designer = self.store.load_state("designer")
        if designer:
            self.designer.load_state_dict(designer)
        self.watch.load_state_dict(self.store.load_state("watch") or {})
        self.watch.resume_trends(self.store.rounds())
        checkpoint = self.store.learner_checkpoint()
        if checkpoint is not None:  # parts that train continue from the last committed round (a shared policy once)
            for part in self.checkpointed:
                part.restore(checkpoint)
        self.buffer.hold(self.store.levels(self.buffer.state.levels))

    def _pool_similarity(self, env_ids: list[str]) -> np.ndarray:
        """How alike the named buffer levels are, by code and first play (what ``buffer.evict = "redundant"`` reads)."""
        return self.diversity.kernel({e: self.buffer.level(e).source or "" for e in env_ids})

    def _first_play(self, env_id: str) -> str | None:
        """The transcript of a level's first no-hint play, as the store holds it (for the pool's diversity)."""
        first = self.store.episodes(env_id=env_id, split="train", hinted=False, limit=1)
        if not first:
            return None
        turns = first[0]["turns"]
        return transcript_text([t["observation"] for t in turns], [t["action"] for t in turns])

    # -- one round ------------------------------------------------------------
    def round(self, n: int) -> RoundSummary:
        """Play round ``n``; its record goes to the store in one transaction before this returns."""
        opened = self.open_round(n)
        with opened.clock("play"):
            episodes = self.play(n, opened.levels, opened.shares)
        return self.close_round(opened, episodes)

    def open_round(self, n: int) -> OpenRound:
        """The first half of round ``n``: new levels through the gate, replayed ones from the buffer, and the slots.

        A round is split here so that a trainer can play it (``loop.driven``): the loop plays the slots itself,
        a trainer plays them as its own rollouts; both then close the round with the same ``close_round``.
        """
        started = time.perf_counter()
        clock = _Clock()
        cfg = self.config
        rng = np.random.default_rng(derive_seed(cfg.seed, "round", n))
        record = RoundRecord(n)

        with clock("design"):
            n_replay = self.buffer.replay_count(cfg.envs_per_round)
            record.proposals = self.new_levels(n, self.active_skills(n), cfg.envs_per_round - n_replay)
        new = record.new
        # Replay fills the round, also where the designer came up short (invalid or duplicate levels).
        record.replayed = self.buffer.sample_replay(cfg.envs_per_round - len(new), n, rng,
                                                    fresh=[(p.candidate.family, p.candidate.skill) for p in new])
        record.chosen = [p.name for p in new] + record.replayed
        if not record.chosen:
            self.stop_if_nothing_to_play(record.proposals)
        levels = {**{p.name: p.candidate.level for p in new}, **{e: self.buffer.level(e) for e in record.replayed}}
        return OpenRound(record, levels, steps.shares(record.chosen, cfg.envs_per_round, n), clock, started)

    def close_round(self, opened: OpenRound, episodes: list[Episode]) -> RoundSummary:
        """The second half: score ``episodes`` (the plays of ``opened``'s slots), watch, learn, remember, store."""
        record, levels, clock, started = opened.record, opened.levels, opened.clock, opened.started
        n = record.round
        cfg = self.config
        new = record.new
        record.episodes = episodes
        for ep in record.episodes:  # a level's transcript for the diversity figures: its first no-hint play
            if not ep.hinted and ep.env_id not in record.replayed:
                self.diversity.add_play(ep.env_id, _transcript(ep))
        record.stats = score(levels, record.episodes, self.state.skill_ema)
        with clock("watch"):  # probe plays; every play's evidence; what each level's reward keeps
            probes = self._await(self.watch.probe(self.host, levels, [p.name for p in new], record.episodes,
                                                  cfg.rollout))
            pool = {e: self.buffer.level(e).source or "" for e in self.buffer.state.levels}
            self.watch.observe(n, record.episodes, probes,
                               {p.name: p.candidate.part or self.designer.name for p in new},
                               {**pool, **{p.name: p.candidate.level.source or "" for p in new}}, record.stats)
            shares = self.watch.prices(record.stats)
        with clock("learn"), self._working(n, "learn", 1, "updates"):  # a model's GRPO step takes minutes on a CPU
            learned, designed = self.learn(record.episodes), {}
            record.rewards, record.feedback = steps.feedback(record.proposals, record.stats, self.reward_fn, shares)
            if self.learning_designer is not None:
                designed = dict(self.learning_designer.update(record.feedback) or {})  # a model reports its step
            self.remember(n, record, levels)
        with clock("heldout"):
            heldout, record.heldout_episodes = self.heldout(n)

        self.state.next_round = n + 1
        self.state.episodes += len(record.episodes)
        self.state.elapsed_s += time.perf_counter() - started
        kept = self.buffer.state.levels
        record.difficulty = {e: difficulty_index(kept[e].family, kept[e].knobs) if e in kept else None
                             for e in record.chosen}
        record.summary = steps.summarize(
            record, skills={e: kept[e].skill for e in record.chosen if e in kept}, learner={**learned, **designed},
            heldout=heldout, buffer=self.buffer.stats(), buffer_size=len(self.buffer),
            diversity={**self.diversity.summary(
                {e: levels[e].source or "" for e in record.chosen if e not in record.replayed and e in kept},
                {e: self.buffer.level(e).source or "" for e in kept}),
                **self.watch.diversity([e for e in record.chosen if e not in record.replayed], list(kept))},
            seconds=time.perf_counter() - started)
        record.summary.timings = clock.seconds
        record.summary.infrastructure = self._infrastructure_events()
        # Is the designer gaming its reward? Its levels' findings, and its trend against held-out success and diversity.
        record.summary.designer_watch = self.watch.assess(n, record.summary.to_dict())
        self.watch.keep(set(kept), n)
        self.write(record)
        return record.summary

    def stop_if_nothing_to_play(self, proposals: list[Proposal]) -> None:
        """A fixed pool that has proposed every file and had each refused leaves nothing to play in this round or
        any later one: the run stops, naming the refused files and why, rather than play nothing every round."""
        from ..designers.pool import PoolDesigner, PoolError, nothing_to_play, refusal_reason
        from ..validate.verdict import Verdict

        pool = self.designer
        if not (isinstance(pool, PoolDesigner) and pool.exhausted and len(self.buffer) == 0):
            return
        refused = [(row["candidate"].get("meta", {}).get("file", "?"),
                    refusal_reason(Verdict.from_dict(row["verdict"]) if row["verdict"] else None,
                                   row["candidate"].get("refusal")))
                   for row in self.store.proposals()]
        refused += [(p.candidate.pool_file or p.name, refusal_reason(p.verdict, p.refusal)) for p in proposals]
        raise PoolError(nothing_to_play(self.config.pool.path or "", refused))

    def _infrastructure_events(self) -> dict[str, int]:
        """What the executor lost and redid this round (actors, requests, validations); never scored."""
        now = self.executor.counters()
        events = {k: v - self._infra_seen.get(k, 0) for k, v in now.items() if v != self._infra_seen.get(k, 0)}
        self._infra_seen = now
        return events

    def active_skills(self, n: int) -> list[str]:
        """Rotate over the configured skills, ``skills_per_round`` at a time (paper: 3 of 6)."""
        skills = self.config.skills
        k = min(self.config.skills_per_round, len(skills))
        start = (n * k) % len(skills)
        return [skills[(start + i) % len(skills)] for i in range(k)]

    # -- branch: new levels ---------------------------------------------------
    def new_levels(self, n: int, skills: list[str], count: int) -> list[Proposal]:
        """Propose ``count`` levels over ``skills``; validate each in the sandbox; drop duplicates."""
        if count <= 0:
            return []
        drafts: list[tuple[str, Candidate]] = []
        with self._working(n, "design", count, "proposals") as meter:
            for skill, k in zip(skills, fresh_slots(n, count, len(skills), len(self.config.skills))):
                if k == 0:
                    continue
                if meter is not None:
                    meter.advance(0, detail=f"proposals {meter.done + 1}-{meter.done + k}, skill {skill!r}")
                for i, cand in enumerate(self._await(self.designer.propose(self.context(n, skill, k)))):
                    drafts.append((f"r{n:03d}-{skill.split()[0][:5].lower()}-{i:02d}", cand))
                if meter is not None:
                    meter.advance(k)
        # The gate runs on every candidate not validated yet at once (the executor may spread them out).
        unchecked = [i for i, (_name, c) in enumerate(drafts) if c.verdict is None]
        with self._working(n, "validate", len(unchecked), "levels") if unchecked else nullcontext():
            verdicts = self.executor.validate([drafts[i][1].level for i in unchecked], self.config.validation,
                                              names=[f"{drafts[i][0]}.py" for i in unchecked])
        checked = dict(zip(unchecked, verdicts))
        judge = Judge(known=self.buffer.duplicate_of)
        return [judge(cand, name, checked.get(i)) for i, (name, cand) in enumerate(drafts)]

    def context(self, n: int, skill: str, count: int) -> DesignContext:
        """The difficulty picture the designer sees for one skill."""
        def summary(r: LevelRecord) -> LevelSummary:
            return level_summary(self.buffer, r)

        ranked = self.buffer.ranked(skill)
        lo, hi = bands.FRONTIER
        return DesignContext(
            skill=skill, count=count, round=n, seed=derive_seed(self.config.seed, "design", n, skill),
            frontier=[summary(r) for r in ranked if lo <= r.win_rate <= hi][:8],
            mastered=[summary(r) for r in ranked if r.win_rate > bands.MASTERED][:4],
            hopeless=[summary(r) for r in ranked if r.win_rate_hint < bands.HOPELESS][:4],
            parents=[summary(r) for r in _best_per_family(ranked, 8)],
        )

    # -- branch: play ---------------------------------------------------------
    def plays(self, n: int, levels: dict[str, Level], shares: dict[str, int]) -> list[Play]:
        """G no-hint and H hint plays per level and slot it fills; both arms draw the same instance seeds."""
        cfg = self.config
        plays = []
        for env_id in levels:
            times = shares[env_id]
            for arm, count in ((False, cfg.plays * times), (True, cfg.hint_plays * times)):
                for i in range(count):
                    group = i // cfg.group_size
                    seed = derive_seed(cfg.seed, "train", n, env_id, group)
                    plays.append(Play(env_id, seed, hinted=arm, group=group))
        return plays

    def play(self, n: int, levels: dict[str, Level], shares: dict[str, int]) -> list[Episode]:
        """The agent plays round ``n``'s slots (``plays``)."""
        plays = self.plays(n, levels, shares)
        with self._working(n, "play", len(plays)) as meter:
            return self._await(run_episodes(self.host, levels, plays, self.agent, self.config.rollout,
                                            on_episode=meter))

    # -- branch: learn --------------------------------------------------------
    def learn(self, episodes: list[Episode]) -> dict[str, Any]:
        if self.learner is None:
            return {}
        train = [e for e in episodes if e.scored and (self.train_on_hint or not e.hinted)]
        return dict(self.learner.update(train) or {})

    # -- branch: remember -----------------------------------------------------
    def remember(self, n: int, record: RoundRecord, levels: dict[str, Level]) -> None:
        """The buffer keeps the new levels and this round's scores; the skills' win-rate EMAs move."""
        for p in record.new:
            self.buffer.add(LevelRecord.of(p.name, p.candidate.level, n), p.candidate.level)
        scores = dict(record.rewards)
        if self.config.buffer.replay_score == "learning_progress":  # replay by no-hint positive value loss
            scores = self._learning_progress(record, levels)
        for env_id, s in record.stats.items():
            self.buffer.record_play(env_id, n, scores[env_id], s.win_rate, s.win_rate_hint, s.regret)
        by_skill: dict[str, list[float]] = defaultdict(list)
        for env_id, s in record.stats.items():
            by_skill[levels[env_id].info.skill or "unknown"].append(s.win_rate)
        for skill, rates in by_skill.items():
            old = self.state.skill_ema.get(skill, float(np.mean(rates)))
            self.state.skill_ema[skill] = (1 - SKILL_EMA_ALPHA) * old + SKILL_EMA_ALPHA * float(np.mean(rates))

    def _learning_progress(self, record: RoundRecord, levels: dict[str, Level]) -> dict[str, float]:
        """Each played level's no-hint learning progress (see ``curriculum.buffer``); read before ``record_play``."""
        returns: dict[str, list[float]] = defaultdict(list)
        for ep in record.episodes:
            if ep.scored and not ep.hinted:
                returns[ep.env_id].append(ep.ret)
        kept = self.buffer.state.levels
        out = {}
        for env_id in record.stats:
            level = kept.get(env_id)
            prior = level.win_rate if level is not None and level.times_played else \
                self.state.skill_ema.get(levels[env_id].info.skill or "unknown", 0.5)
            out[env_id] = learning_progress(returns[env_id], prior)
        return out

    def heldout(self, n: int) -> tuple[dict[str, Any], list[Episode]]:
        """The held-out suites' figures and episodes, in rounds that evaluate (else nothing)."""
        held = self.config.heldout
        due = set(due_suites(self.suites, n, self.config.rounds, held.every, held.suites_every))
        if not due:
            return {}, []
        seed = self.config.seed if held.seed is None else held.seed
        suite = [h for h in self.suite if h.suite in due]
        # A learner evaluates on its own random stream, so evaluation never shifts its training.
        with self.learner.evaluating(seed) if self.learner is not None else nullcontext():
            total = len(heldout_plays(suite, seeds=held.seeds, seed=seed, hint=held.hint, primary=self.suites[0]))
            with self._working(n, "heldout", total) as meter:
                return self._await(evaluate(self.agent, self.host, suite, seeds=held.seeds, seed=seed,
                                            hint=held.hint, rollout=self.config.rollout, primary=self.suites[0],
                                            on_episode=meter))

    def _working(self, n: int, phase: str, total: int, unit: str = "episodes") -> Heartbeat:
        """A phase of round ``n``: its meter (None when nobody listens), which also reports whenever the phase
        has finished nothing for ``progress_every`` seconds (a long generation, a validation)."""
        meter = None if self.on_progress is None else ProgressMeter(self.on_progress, n, phase, total, unit,
                                                                    live_tokens=sampled_tokens)
        return Heartbeat(meter, self.progress_every)

    # -- bookkeeping ----------------------------------------------------------
    def write(self, record: RoundRecord) -> None:
        """The round's record in one transaction; the learner's checkpoint first, named by round."""
        n = record.round
        record.states = {"loop": self.state.to_dict(), "buffer": self.buffer.state.to_dict(),
                         "designer": self.designer.state_dict(), "watch": self.watch.state_dict()}
        if self.checkpointed:
            record.checkpoint = self.store.checkpoint_dir / f"round-{n:04d}"
            for part in self.checkpointed:
                part.save(record.checkpoint)
            record.states["learner"] = {"checkpoint": record.checkpoint.name, "round": n}
        self.store.write_round(record)
        if record.checkpoint is not None:  # keep the committed checkpoint only
            for old in self.store.checkpoint_dir.glob("round-*"):
                if old != record.checkpoint:
                    shutil.rmtree(old, ignore_errors=True)


def _quiet_on_interrupt(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A task that Ctrl-C or SIGTERM unwound is no error to report: the run says once that it stopped."""
    if isinstance(context.get("exception"), (KeyboardInterrupt, SystemExit)):
        return
    loop.default_exception_handler(context)


def _best_per_family(ranked: list[LevelRecord], k: int) -> list[LevelRecord]:
    """The ``k`` best levels of each family (levels without one: ``2k`` in all), best first.

    A plain top 16 of a skill held only its best-scoring family's levels, so a
    family the agent had outgrown (all its levels scoring low) had no parents to
    make harder.
    """
    seen: Counter[str | None] = Counter()
    kept = []
    for r in ranked:
        seen[r.family] += 1
        if seen[r.family] <= (k if r.family else 2 * k):
            kept.append(r)
    return kept


def _transcript(episode: Episode) -> str:
    return transcript_text([t.observation for t in episode.turns], [t.action for t in episode.turns])


