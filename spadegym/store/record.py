"""One round as one typed value: the loop and the red team build a ``RoundRecord``; the store writes it in one call.

``RoundSummary`` is a self-play round's figures, as the console line, TensorBoard,
the report and ``RunResult`` read them; it is stored as the ``rounds.summary`` JSON
(a red-team round stores its own figures, any ``Summary``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from ..designers.base import Feedback
from ..designers.judge import Proposal
from ..rollout.records import Episode
from ..signals import EnvStats


class Summary(Protocol):
    """A round's figures as the store keeps them."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass
class RoundSummary:
    """The figures of one round (means over the levels played; None where there was nothing to average)."""

    round: int
    seconds: float = 0.0
    episodes: int = 0
    proposals: int = 0
    valid: int = 0
    refusals: dict[str, int] = field(default_factory=dict)  # refusal -> count
    played: int = 0  # levels played (new + replayed)
    replayed: int = 0
    win_rate: float | None = None  # no-hint success, mean over levels
    win_rate_hint: float | None = None
    #: Mean return beside the win rate: a win is the full reward, so partial credit shows here only.
    return_mean: float | None = None
    return_mean_hint: float | None = None
    regret_mean: float | None = None  # hint regret
    designer_reward_mean: float | None = None  # raw (uncentred) designer reward
    band_fraction: float | None = None  # share of levels with a win rate in the learnable band
    difficulty_mean: float | None = None  # difficulty index of the levels played
    difficulty_new_mean: float | None = None  # ... of the new ones
    skill_mix: dict[str, int] = field(default_factory=dict)  # levels played per skill
    hint_oracle_corr: float | None = None  # agreement of hint regret with oracle regret
    episode_failures: dict[str, int] = field(default_factory=dict)  # failure -> count
    buffer: dict[str, Any] = field(default_factory=dict)  # LevelBuffer.stats()
    buffer_size: int = 0
    diversity: dict[str, Any] = field(default_factory=dict)  # Vendi scores of new levels and the pool (curriculum.diversity)
    learner: dict[str, float] = field(default_factory=dict)  # the learner's update figures
    heldout: dict[str, Any] = field(default_factory=dict)  # heldout_* figures, in rounds that evaluate
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    infrastructure: dict[str, int] = field(default_factory=dict)  # what the executor lost and redid (never scored)
    designer_watch: dict[str, Any] = field(default_factory=dict)  # the reward-hacking watch (signals.hacking)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: held-out figures sit at the top level (``heldout_success``, ...); no empty infrastructure."""
        data = asdict(self)
        heldout, timings, infrastructure = data.pop("heldout"), data.pop("timings"), data.pop("infrastructure")
        watch = data.pop("designer_watch")
        return {**data, **heldout, "timings": timings, **({"infrastructure": infrastructure} if infrastructure else {}),
                "designer_watch": watch}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoundSummary:
        """A summary back from its stored form (``to_dict``; the store's ``rounds``): the keys that are no field of
        its own are its held-out figures."""
        names = {f.name for f in fields(cls)} - {"heldout"}
        return cls(**{k: v for k, v in data.items() if k in names},
                   heldout={k: v for k, v in data.items() if k not in names})


@dataclass
class RoundRecord:
    """Everything round ``round`` produced, filled in phase by phase (design, play, score, learn, evaluate).

    A red-team round fills the same record (``redteam.round``): its proposals, the target's episodes
    under each level's env id, the statistics and rewards of the levels played, and ``clusters``, the
    failure each played level joined; it has no replays, held-out episodes, difficulties or feedback rows.
    """

    round: int
    proposals: list[Proposal] = field(default_factory=list)  # judged, valid or not
    chosen: list[str] = field(default_factory=list)  # env ids played: new, then replayed
    replayed: list[str] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    stats: dict[str, EnvStats] = field(default_factory=dict)  # per level played
    rewards: dict[str, float] = field(default_factory=dict)  # raw designer reward per level played
    feedback: list[Feedback] = field(default_factory=list)  # what the designer was told, per candidate (stored)
    difficulty: dict[str, float | None] = field(default_factory=dict)  # difficulty index per level played
    heldout_episodes: list[Episode] = field(default_factory=list)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)  # resume state: loop, buffer, designer, learner
    checkpoint: Path | None = None  # the learner's checkpoint of this round
    summary: Summary | None = None  # a ``RoundSummary`` in a self-play round
    #: A red-team round's failure cluster per accepted level (None: the target did not fail it); None in self-play.
    #: Its levels and scores are stored with their cluster in place of the loop's difficulty and class name.
    clusters: dict[str, str | None] | None = None

    @property
    def new(self) -> list[Proposal]:
        """The accepted proposals (new levels of this round)."""
        return [p for p in self.proposals if p.valid]
