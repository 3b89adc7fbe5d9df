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
"""

from __future__ import annotations

import asyncio
import math
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.base import Agent, LearningAgent
from ..curriculum import BufferState, LevelBuffer, LevelRecord
from ..designers.base import Candidate, DesignContext, Designer, Feedback, LearningDesigner, LevelSummary
from ..designers.judge import Judge, Proposal, share
from ..envfile import EnvFileInfo, inspect_source
from ..executor import Executor, ValidationJob
from ..families import difficulty_index
from ..rollout import EnvSpec, Episode, Play, derive_seed, run_episodes
from ..signals import EnvStats, center_by_skill, get_designer_reward, invalid_reward, pearson
from ..store import RunStore
from .config import RunConfig
from .heldout import HeldoutEnv, build_suite, evaluate

#: Learnable band for the report's "band fraction" (issue: win rate in [0.2, 0.8]).
LEARNABLE_BAND = (0.2, 0.8)
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


class SelfPlay:
    """Owns the parts of a run and steps it round by round."""

    def __init__(self, config: RunConfig, store: RunStore, executor: Executor, designer: Designer, agent: Agent):
        self.config, self.store, self.executor = config, store, executor
        self.sandbox = executor.sandbox  # where episodes' environments run
        self.designer, self.agent = designer, agent
        # What the parts can do is declared by their protocols and read here, once.
        self.learner: LearningAgent | None = agent if isinstance(agent, LearningAgent) else None
        self.learning_designer: LearningDesigner | None = (
            designer if isinstance(designer, LearningDesigner) else None)
        self.reward_fn = get_designer_reward(config.designer_reward)
        self.buffer = LevelBuffer(config.buffer)
        self.state = LoopState()
        self.specs: dict[str, EnvSpec] = {}  # env id -> source for every level the buffer may replay
        self.infos: dict[str, EnvFileInfo] = {}  # env id -> what its file declares (parsed once)
        self.suite: list[HeldoutEnv] = build_suite(config.heldout.levels)
        self.train_on_hint = config.train_on_hint if config.train_on_hint is not None else \
            bool(self.learner and self.learner.trains_on_hint)
        self._infra_seen: dict[str, int] = {}
        # One event loop for the whole run: LLM clients stay bound to the loop they started on.
        self._loop = asyncio.new_event_loop()
        self._restore()

    def _await(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Release the agent's connections and the event loop."""
        try:
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
        checkpoint = resume_checkpoint(self.store)
        if self.learner is not None and checkpoint is not None:
            self.learner.restore(checkpoint)
        for env_id in self.buffer.state.levels:
            row = self.store.environment(env_id)
            if row is not None:
                self._register(env_id, EnvSpec(env_id, row["source"], f"{env_id}.py", row.get("hint")))

    def _register(self, env_id: str, spec: EnvSpec) -> None:
        self.specs[env_id] = spec
        self.infos[env_id] = inspect_source(spec.source)

    # -- one round ------------------------------------------------------------
    def round(self, n: int) -> dict[str, Any]:
        started = time.perf_counter()
        clock = _Clock()
        rng = np.random.default_rng(derive_seed(self.config.seed, "round", n))
        skills = self.active_skills(n)

        with clock("design"):
            n_replay = self.buffer.replay_count(self.config.envs_per_round)
            proposals = self.new_levels(n, skills, self.config.envs_per_round - n_replay)
        new = [p for p in proposals if p.valid and p.env_id]
        fresh = [p.env_id for p in new]
        # Replay fills the round, also where the designer came up short (invalid or duplicate levels).
        replayed = self.buffer.sample_replay(self.config.envs_per_round - len(fresh), n, rng,
                                             fresh=[(p.candidate.family, p.candidate.skill) for p in new])
        chosen = fresh + replayed

        with clock("play"):
            episodes = self.play(n, chosen)
        stats = self.score(chosen, episodes)
        with clock("learn"):
            learner_stats = self.learn(episodes)
            rewards = self.reward_designer(proposals, stats)
            self.remember(n, proposals, stats, rewards)
        with clock("heldout"):
            heldout, heldout_episodes = self.heldout(n)

        self.state.next_round = n + 1
        self.state.episodes += len(episodes)
        self.state.elapsed_s += time.perf_counter() - started
        summary = self.summarize(n, proposals, chosen, replayed, stats, rewards, episodes, learner_stats,
                                 heldout, time.perf_counter() - started)
        summary["timings"] = clock.seconds
        infra = self._infrastructure_events()
        if infra:
            summary["infrastructure"] = infra
        self.write(n, proposals, chosen, episodes, heldout_episodes, stats, rewards, summary)
        return summary

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
        for skill, k in zip(skills, fresh_slots(n, count, len(skills), len(self.config.skills))):
            if k == 0:
                continue
            for i, cand in enumerate(self._await(self.designer.propose(self.context(n, skill, k)))):
                drafts.append((f"r{n:03d}-{skill.split()[0][:5].lower()}-{i:02d}", cand))
        # The gate runs on every candidate not validated yet at once (the executor may spread them out).
        unchecked = [i for i, (_name, c) in enumerate(drafts) if c.verdict is None]
        jobs = [ValidationJob(drafts[i][1].source, f"{drafts[i][0]}.py", drafts[i][1].hint) for i in unchecked]
        checked = dict(zip(unchecked, self.executor.validate(jobs, self._validation_config())))
        judge = Judge(known=self.buffer.duplicate_of)
        proposals: list[Proposal] = []
        for i, (name, cand) in enumerate(drafts):
            proposal = judge(cand, name, checked.get(i))
            proposals.append(proposal)
            if proposal.valid:
                self._register(name, EnvSpec(name, cand.source, f"{name}.py", cand.hint))
        return proposals

    def _validation_config(self) -> Any:
        from ..validate import ValidationConfig

        return ValidationConfig(**self.config.validation)

    def context(self, n: int, skill: str, count: int) -> DesignContext:
        """The difficulty picture the designer sees for one skill."""
        def summary(r: LevelRecord) -> LevelSummary:
            spec = self.specs.get(r.env_id)
            source = spec.source if spec else None
            return LevelSummary(r.env_id, r.skill, r.win_rate, r.win_rate_hint, r.regret, r.score,
                                family=r.family, knobs=r.knobs, code_excerpt=(source or "")[:1500],
                                source=source, depth=r.depth, retired=self.buffer.retired(r))

        ranked = self.buffer.ranked(skill)
        lo, hi = 0.15, 0.85
        return DesignContext(
            skill=skill, count=count, round=n, seed=derive_seed(self.config.seed, "design", n, skill),
            frontier=[summary(r) for r in ranked if lo <= r.win_rate <= hi][:8],
            mastered=[summary(r) for r in ranked if r.win_rate > 0.9][:4],
            hopeless=[summary(r) for r in ranked if r.win_rate_hint < 0.1][:4],
            parents=[summary(r) for r in _best_per_family(ranked, 8)],
        )

    # -- branch: play ---------------------------------------------------------
    def play(self, n: int, env_ids: list[str]) -> list[Episode]:
        """G no-hint and H hint plays per level; both arms draw the same instance seeds."""
        cfg = self.config
        plays = []
        for env_id in env_ids:
            for arm, count in ((False, cfg.plays), (True, cfg.hint_plays)):
                for i in range(count):
                    group = i // cfg.group_size
                    seed = derive_seed(cfg.seed, "train", n, env_id, group)
                    plays.append(Play(env_id, seed, hinted=arm, group=group))
        envs = {e: self.specs[e] for e in env_ids}
        return self._await(run_episodes(self.sandbox, envs, plays, self.agent, cfg.rollout))

    def score(self, env_ids: list[str], episodes: list[Episode]) -> dict[str, EnvStats]:
        by_arm: dict[tuple[str, bool], list[Episode]] = defaultdict(list)
        for ep in episodes:
            if ep.scored:
                by_arm[(ep.env_id, ep.hinted)].append(ep)

        def rate(eps: list[Episode], attr: str) -> float:
            return float(np.mean([getattr(e, attr) for e in eps])) if eps else 0.0

        stats = {}
        for env_id in env_ids:
            plain, hinted = by_arm[(env_id, False)], by_arm[(env_id, True)]
            info = self.infos[env_id]
            skill = info.skill or "unknown"
            stats[env_id] = EnvStats(
                win_rate=rate(plain, "success"), win_rate_hint=rate(hinted, "success"),
                mean_return=rate(plain, "ret"), mean_return_hint=rate(hinted, "ret"),
                plays=len(plain), plays_hint=len(hinted),
                # The gate checked that solution() wins, so its return is the maximal reward.
                oracle_return=1.0 if info.has_solution else None,
                skill_ema=self.state.skill_ema.get(skill),
            )
        return stats

    # -- branch: learn --------------------------------------------------------
    def learn(self, episodes: list[Episode]) -> dict[str, Any]:
        if self.learner is None:
            return {}
        train = [e for e in episodes if e.scored and (self.train_on_hint or not e.hinted)]
        return dict(self.learner.update(train) or {})

    def reward_designer(self, proposals: list[Proposal], stats: dict[str, EnvStats]) -> dict[str, float]:
        """Designer rewards of this round's levels (raw) and feedback to the designer (centred)."""
        raw = {env_id: float(self.reward_fn(s)) for env_id, s in stats.items()}
        valid = [p for p in proposals if p.valid and p.name in raw]
        centred = center_by_skill([raw[p.name] for p in valid], [p.candidate.skill for p in valid])
        floor = invalid_reward(centred)
        # A designer rewarded on its first attempt earns, for a repaired level, what an invalid one earns.
        centred = [floor if p.candidate.reward_as_invalid else r for p, r in zip(valid, centred)]
        feedback = [Feedback(p.candidate.candidate_id, r, True, p.candidate.lineage.operator,
                             {"raw": raw[p.name], "env_id": p.name, "win_rate": stats[p.name].win_rate,
                              "regret": stats[p.name].mean_return_hint - stats[p.name].mean_return})
                    for p, r in zip(valid, centred)]
        feedback += [Feedback(p.candidate.candidate_id, floor, False, p.candidate.lineage.operator,
                              {"reason": p.refusal}) for p in proposals if not p.valid]
        if self.learning_designer is not None:
            self.learning_designer.update(feedback)
        self._feedback = feedback
        return raw

    # -- branch: remember -----------------------------------------------------
    def remember(self, n: int, proposals: list[Proposal], stats: dict[str, EnvStats],
                 rewards: dict[str, float]) -> None:
        for p in proposals:
            if p.valid and p.env_id:
                c = p.candidate
                self.buffer.add(LevelRecord(
                    env_id=p.env_id, skill=c.skill, code_hash=p.code_hash, added_round=n,
                    depth=c.lineage.depth, parents=list(c.lineage.parents), family=c.family, knobs=dict(c.knobs)))
        for env_id, s in stats.items():
            self.buffer.record_play(env_id, n, rewards[env_id], s.win_rate, s.win_rate_hint,
                                    s.mean_return_hint - s.mean_return)
        by_skill: dict[str, list[float]] = defaultdict(list)
        for env_id, s in stats.items():
            by_skill[self.infos[env_id].skill or "unknown"].append(s.win_rate)
        # Levels that left the buffer are never replayed: forget their sources.
        self.specs = {k: v for k, v in self.specs.items() if k in self.buffer}
        self.infos = {k: v for k, v in self.infos.items() if k in self.buffer}
        for skill, rates in by_skill.items():
            old = self.state.skill_ema.get(skill, float(np.mean(rates)))
            self.state.skill_ema[skill] = (1 - SKILL_EMA_ALPHA) * old + SKILL_EMA_ALPHA * float(np.mean(rates))

    def heldout(self, n: int) -> tuple[dict[str, Any], list[Episode]]:
        """The held-out suite's figures and episodes, in rounds that evaluate (else nothing)."""
        every = self.config.heldout.every
        last = n + 1 >= self.config.rounds
        if not (last or (every and n % every == 0)):
            return {}, []
        held = self.config.heldout
        seed = self.config.seed if held.seed is None else held.seed
        # A learner evaluates on its own random stream, so evaluation never shifts its training.
        with self.learner.evaluating(seed) if self.learner is not None else nullcontext():
            return self._await(evaluate(self.agent, self.sandbox, self.suite, seeds=held.seeds, seed=seed,
                                        hint=held.hint, rollout=self.config.rollout))

    # -- bookkeeping ----------------------------------------------------------
    def summarize(self, n: int, proposals: list[Proposal], chosen: list[str], replayed: list[str],
                  stats: dict[str, EnvStats], rewards: dict[str, float], episodes: list[Episode],
                  learner_stats: dict[str, Any], heldout: dict[str, Any], seconds: float) -> dict[str, Any]:
        win = [s.win_rate for s in stats.values()]
        regrets = [s.mean_return_hint - s.mean_return for s in stats.values()]
        oracle = [(s.mean_return_hint - s.mean_return, s.oracle_return - s.mean_return)
                  for s in stats.values() if s.oracle_return is not None]
        diffs = {e: difficulty_index(self._family(e), self._knobs(e)) for e in chosen}
        new_diffs = [d for e, d in diffs.items() if d is not None and e not in replayed]
        failures = Counter(e.failure for e in episodes if e.failure)

        def mean(xs: list[float]) -> float | None:
            return round(float(np.mean(xs)), 4) if xs else None

        return {
            "round": n, "seconds": round(seconds, 3), "episodes": len(episodes),
            "proposals": len(proposals), "valid": sum(p.valid for p in proposals),
            "refusals": dict(Counter(p.refusal for p in proposals if not p.valid)),
            "played": len(chosen), "replayed": len(replayed),
            "win_rate": mean(win), "win_rate_hint": mean([s.win_rate_hint for s in stats.values()]),
            "regret_mean": mean(regrets), "designer_reward_mean": mean(list(rewards.values())),
            "band_fraction": mean([float(LEARNABLE_BAND[0] <= w <= LEARNABLE_BAND[1]) for w in win]),
            "difficulty_mean": mean([d for d in diffs.values() if d is not None]),
            "difficulty_new_mean": mean(new_diffs),
            "skill_mix": dict(Counter(self.buffer.state.levels[e].skill for e in chosen if e in self.buffer)),
            "hint_oracle_corr": pearson([a for a, _ in oracle], [b for _, b in oracle]),
            "episode_failures": dict(failures),
            "buffer": self.buffer.stats(), "buffer_size": len(self.buffer),
            "learner": {k: v for k, v in learner_stats.items() if isinstance(v, (int, float))},
            **heldout,
        }

    def _family(self, env_id: str) -> str | None:
        r = self.buffer.state.levels.get(env_id)
        return r.family if r else None

    def _knobs(self, env_id: str) -> dict[str, Any]:
        r = self.buffer.state.levels.get(env_id)
        return r.knobs if r else {}

    def write(self, n: int, proposals: list[Proposal], chosen: list[str], episodes: list[Episode],
              heldout_episodes: list[Episode], stats: dict[str, EnvStats], rewards: dict[str, float],
              summary: dict[str, Any]) -> None:
        """Everything of round ``n`` in one transaction; the learner checkpoint first, named by round."""
        checkpoint = None
        if self.learner is not None:
            checkpoint = self.store.checkpoint_dir / f"round-{n:04d}"
            self.learner.save(checkpoint)
        with self.store.round(n) as tx:
            for p in proposals:
                c = p.candidate
                tx.add_proposal(c.to_dict(), p.verdict.to_dict(), p.env_id, p.valid)
                if p.valid and p.env_id:
                    info = self.infos.get(p.env_id) or inspect_source(c.source)
                    tx.add_environment(p.env_id, c.source, c.hint, c.skill, c.family, c.knobs,
                                       c.lineage.__dict__, p.code_hash,
                                       {"difficulty": difficulty_index(c.family, c.knobs),
                                        "class_name": info.class_name, **c.meta})
            for fb in self._feedback:
                if fb.candidate_id:
                    tx.set_proposal_reward(fb.candidate_id, fb.reward)
            tx.add_episodes([{**e.to_dict(), "round": n, "split": "train"} for e in episodes])
            tx.add_episodes([{**e.to_dict(), "round": n, "split": "heldout"} for e in heldout_episodes])
            tx.add_scores([{
                "env_id": e, "win_rate": s.win_rate, "win_rate_hint": s.win_rate_hint,
                "regret": s.mean_return_hint - s.mean_return,
                "oracle_regret": None if s.oracle_return is None else s.oracle_return - s.mean_return,
                "designer_reward": rewards[e], "plays": s.plays, "plays_hint": s.plays_hint,
                "difficulty": difficulty_index(self._family(e), self._knobs(e)),
            } for e, s in stats.items()])
            tx.save_state("loop", self.state.to_dict())
            tx.save_state("buffer", self.buffer.state.to_dict())
            tx.save_state("designer", self.designer.state_dict())
            if checkpoint is not None:
                tx.save_state("learner", {"checkpoint": checkpoint.name, "round": n})
            tx.finish(summary)
        if checkpoint is not None:  # keep the committed checkpoint only
            for old in self.store.checkpoint_dir.glob("round-*"):
                if old != checkpoint:
                    shutil.rmtree(old, ignore_errors=True)


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


def fresh_slots(n: int, count: int, active: int, skills: int) -> list[int]:
    """Split round ``n``'s ``count`` new levels over its ``active`` skills (of ``skills``); the remainder rotates.

    Giving the remainder to the first active skills every round favoured the
    skills that open a rotation: with 4 slots over 3 of 6 skills, two skills
    got twice the fresh levels of the other four for the whole run.
    """
    cycle = skills // math.gcd(skills, active)  # rounds until the same skills are active again
    return share(count, active, turn=n // cycle)  # turn: times this set of skills was active before


def resume_checkpoint(store: RunStore) -> Path | None:
    """The learner checkpoint of the last complete round, if the run has one."""
    state = store.load_state("learner")
    if not state:
        return None
    path = store.checkpoint_dir / state["checkpoint"]
    return path if path.exists() else None
