"""Judge one level against the frozen target: the gate first, then the target's plays.

Every part of red-teaming asks the same question of a file (does the target
fail it, and can it be won?): the hunt for each proposal, minimisation for
each smaller version, confirmation on fresh seeds. ``Prober.probe`` answers it
once, with the validation gate in front: a broken, degenerate or unwinnable
file is never counted as the target's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..agents.base import Agent
from ..envfile import inspect_source
from ..executor import Executor
from ..level import Level, Params
from ..rollout import Episode, Play, RolloutConfig, derive_seed, run_episodes
from ..rollout.scoring import score
from ..signals import EnvStats, feasibility
from ..validate import ValidationConfig
from ..validate.verdict import Verdict


@dataclass
class Probe:
    """What one level showed: the gate's verdict and, when valid, the target's plays."""

    source: str
    valid: bool
    verdict: dict[str, Any] | None
    reason: str | None = None  # why it is not judged: a verdict category
    episodes: list[Episode] = field(default_factory=list)
    stats: EnvStats | None = None
    seeds: list[int] = field(default_factory=list)
    params: Params = field(default_factory=Params)  # the level's family and knobs, where it carries them

    @property
    def feasibility(self) -> float:
        return feasibility(self.stats) if self.stats else 0.0

    def lost_seeds(self) -> list[int]:
        """Instance seeds of the no-hint plays the target did not win, in play order."""
        return [e.seed for e in self.episodes if not e.hinted and e.scored and not e.success]


class Prober:
    """Validates files and plays the target on them (through the run's executor), on seeds fixed by the red-team seed."""

    def __init__(self, executor: Executor, target: Agent, *, seed: int, plays: int, hint_plays: int,
                 max_win_rate: float, min_feasibility: float, rollout: RolloutConfig | None = None,
                 validation: ValidationConfig | None = None, won_at: float | None = None,
                 on_played: Callable[[Level, EnvStats], None] | None = None):
        self.executor, self.target, self.seed = executor, target, seed
        self.on_played = on_played  # told every played level's statistics, whatever asked for the plays
        self.plays, self.hint_plays = plays, hint_plays
        self.max_win_rate, self.min_feasibility, self.won_at = max_win_rate, min_feasibility, won_at
        self.rollout = rollout or RolloutConfig()
        self.validation = validation or ValidationConfig()
        self.validations = 0  # gate calls (the cost of a search)
        self.episodes = 0

    def hunt_seeds(self, count: int | None = None, salt: str = "hunt") -> list[int]:
        """The same instance seeds for every level, so a smaller version is compared on like terms."""
        return [derive_seed(self.seed, salt, i) for i in range(count or self.plays)]

    def gate(self, source: str, hint: str | None = None) -> Verdict:
        """The gate's verdict on a file (one gate call, counted as the search's cost)."""
        self.validations += 1
        return self.executor.validate([Level(source, hint=hint)], self.validation)[0]

    def check(self, source: str, hint: str | None = None, verdict: dict[str, Any] | None = None,
              params: Params | None = None) -> Probe:
        """The gate's verdict (reused when the designer or the judge already has it)."""
        if verdict is None:
            verdict = self.gate(source, hint).to_dict()
        valid = bool(verdict.get("valid"))
        return Probe(source, valid, verdict, None if valid else (verdict.get("category") or "invalid"),
                     params=params or Params())

    async def probe(self, source: str, hint: str | None = None, verdict: dict[str, Any] | None = None,
                    seeds: list[int] | None = None, repeat: int = 1, params: Params | None = None) -> Probe:
        """Validate, then play the target ``repeat`` times per seed without the hint (and with it, if needed).
        ``params``: the family and knobs that rendered ``source``, where the caller made it from them."""
        probe = self.check(source, hint, verdict, params)
        if not probe.valid:
            return probe
        seeds = list(seeds or self.hunt_seeds())
        hinted = [] if inspect_source(source).has_solution else seeds[: self.hint_plays]
        return await self._play(probe, hint, seeds, repeat, hinted)

    async def play_more(self, probe: Probe, hint: str | None, seeds: list[int], repeat: int = 1) -> Probe:
        """``probe`` with more no-hint plays on ``seeds`` (its level passed the gate already; hinted plays,
        if it needed them, were played with the first)."""
        return await self._play(probe, hint, list(seeds), repeat, [])

    async def _play(self, probe: Probe, hint: str | None, seeds: list[int], repeat: int, hinted: list[int]) -> Probe:
        first = len(probe.seeds)
        plays = [Play("level", s, hinted=False, group=first + i) for i, s in enumerate(seeds) for _ in range(repeat)]
        plays += [Play("level", s, hinted=True, group=first + i) for i, s in enumerate(hinted)]
        level = Level(probe.source, hint=hint, params=probe.params)
        episodes = await run_episodes(self.executor.host, {"level": level}, plays, self.target, self.rollout)
        self.episodes += len(episodes)
        stats = score({"level": level}, episodes, {}).get("level")  # the loop's statistics
        if self.on_played is not None and stats is not None:
            self.on_played(level, stats)
        if probe.episodes:
            episodes = probe.episodes + episodes
            stats = score({"level": level}, episodes, {}).get("level")
        return replace(probe, episodes=episodes, stats=stats, seeds=probe.seeds + seeds)

    def won(self, win_rate: float) -> bool:
        """Whether a level played at ``win_rate`` is remembered as won: at least ``won_at``, else not failed."""
        return win_rate >= self.won_at if self.won_at is not None else win_rate > self.max_win_rate

    def fails(self, probe: Probe) -> bool:
        """Valid, solvable, and the target wins at most ``max_win_rate`` of its no-hint plays."""
        return bool(probe.valid and probe.stats and probe.stats.plays
                    and probe.feasibility >= self.min_feasibility and probe.stats.win_rate <= self.max_win_rate)
