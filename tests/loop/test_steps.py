"""The pure steps of a round on hand-made episodes: score, designer feedback, summary."""

from __future__ import annotations

import pytest

from spadegym.designers.base import Candidate, Level, Lineage
from spadegym.designers.judge import Proposal
from spadegym.loop import steps
from spadegym.loop.callbacks import summary_line
from spadegym.rollout import Episode
from spadegym.rollout.scoring import score
from spadegym.signals import EnvStats, hint_regret
from spadegym.store.record import RoundRecord
from spadegym.validate.verdict import Verdict


def plays(env_id: str, hinted: bool, returns: list[float], failure: str | None = None) -> list[Episode]:
    return [Episode(env_id, seed=i, hinted=hinted, ret=r, failure=failure) for i, r in enumerate(returns)]


def proposal(name: str, skill: str, refusal: str | None = None, **candidate) -> Proposal:
    cand = Candidate(Level("src", skill, lineage=Lineage(operator="op")), candidate_id=f"c-{name}", **candidate)
    return Proposal(cand, name, Verdict(f"{name}.py", refusal is None, refusal), f"hash-{name}", refusal)


def level(skill: str, solution: bool = False) -> Level:
    """A file declaring ``skill`` (with a ``solution()`` when asked): what ``score`` reads of a level."""
    solved = "\n    def solution(self):\n        return ['a']\n" if solution else ""
    return Level(f"SKILL = {skill!r}\n\nclass XEnv:\n    def reset(self, seed=None):\n        return 'x', {{}}\n{solved}")


def test_score_counts_only_scored_episodes_per_arm() -> None:
    episodes = (plays("a", False, [1.0, 0.0, 0.0, 0.0]) + plays("a", True, [1.0, 1.0])
                + plays("a", False, [0.0], failure="timeout")  # an infrastructure failure is no loss
                + plays("b", False, [0.5, 0.5]))
    stats = score({"a": level("S", solution=True), "b": level("T")}, episodes, {"S": 0.3})
    a, b = stats["a"], stats["b"]
    assert (a.plays, a.plays_hint, a.win_rate, a.win_rate_hint) == (4, 2, 0.25, 1.0)
    assert a.regret == pytest.approx(0.75) and a.oracle_regret == pytest.approx(0.75) and a.skill_ema == 0.3
    assert b.plays_hint == 0 and b.win_rate_hint == 0.0 and b.oracle_regret is None and b.skill_ema is None
    assert hint_regret(b) == b.regret == -0.5


def test_a_level_whose_every_play_infrastructure_lost_has_no_statistics_not_a_loss() -> None:
    episodes = (plays("gone", False, [0.0, 0.0], failure="infra") + plays("gone", True, [0.0], failure="infra")
                + plays("crashes", False, [0.0, 0.0], failure="exception")  # the level's own fault: it is played
                + plays("fine", False, [1.0]))
    stats = score({e: level("S") for e in ("gone", "crashes", "fine")}, episodes, {})
    assert set(stats) == {"crashes", "fine"} and stats["crashes"].win_rate == 0.0 and stats["fine"].win_rate == 1.0


def test_feedback_centres_within_a_skill_and_floors_refusals_and_repairs() -> None:
    stats = {e: EnvStats(w, 0.0, 0.0, 0.0) for e, w in (("a", 0.1), ("b", 0.3), ("c", 0.9))}
    proposals = [proposal("a", "S"), proposal("b", "S"), proposal("c", "T", reward_as_invalid=True),
                 proposal("d", "S", refusal="duplicate")]
    raw, told = steps.feedback(proposals, stats, lambda s: s.win_rate)
    assert raw == {"a": 0.1, "b": 0.3, "c": 0.9}
    rewards = {feedback.candidate_id: feedback.reward for feedback in told}
    assert rewards["c-a"] == pytest.approx(-0.1) and rewards["c-b"] == pytest.approx(0.1)
    floor = -0.1 - 1.0  # one unit below the lowest valid (centred) reward
    assert rewards["c-c"] == pytest.approx(floor) and rewards["c-d"] == pytest.approx(floor)
    assert [feedback.valid for feedback in told] == [True, True, True, False]
    assert told[-1].details == {"reason": "duplicate"} and told[0].details["env_id"] == "a"


def test_summary_averages_over_levels_and_counts_refusals() -> None:
    record = RoundRecord(3, proposals=[proposal("a", "S"), proposal("x", "S", refusal="leak")],
                         chosen=["a", "r"], replayed=["r"],
                         episodes=plays("a", False, [1.0]) + plays("r", False, [0.0], failure="timeout"),
                         stats={"a": EnvStats(0.5, 1.0, 0.5, 1.0, plays=2, plays_hint=2),
                                "r": EnvStats(1.0, 1.0, 1.0, 1.0, plays=2, plays_hint=2)},
                         rewards={"a": 0.2, "r": 0.4}, difficulty={"a": 0.0, "r": 1.0})
    s = steps.summarize(record, skills={"a": "S"}, learner={"loss": 0.5, "note": "x"},
                        heldout={"heldout_success": 0.25}, buffer={}, buffer_size=2, seconds=1.23456)
    assert (s.round, s.proposals, s.valid, s.refusals, s.played, s.replayed) == (3, 2, 1, {"leak": 1}, 2, 1)
    assert s.win_rate == 0.75 and s.regret_mean == 0.25 and s.designer_reward_mean == pytest.approx(0.3)
    assert s.band_fraction == 0.5 and s.difficulty_mean == 0.5 and s.difficulty_new_mean == 0.0
    assert s.skill_mix == {"S": 1} and s.episode_failures == {"timeout": 1} and s.learner == {"loss": 0.5}
    assert s.seconds == 1.235 and s.hint_oracle_corr is None
    stored = s.to_dict()
    assert stored["heldout_success"] == 0.25 and "heldout" not in stored and "timings" in stored


def test_a_round_without_hinted_plays_has_no_hint_figures_not_zeros() -> None:
    episodes = plays("a", False, [1.0, 0.0]) + plays("b", False, [0.0, 0.0])
    levels = {e: level("S", solution=True) for e in ("a", "b")}
    record = RoundRecord(0, chosen=["a", "b"], episodes=episodes,
                         stats=score(levels, episodes, {}), rewards={"a": 0.1, "b": 0.0})
    s = steps.summarize(record, skills={}, learner={}, heldout={"heldout_success": 0.5}, buffer={}, buffer_size=2,
                        seconds=1.0)
    assert s.win_rate == 0.25 and s.return_mean == 0.25
    assert s.win_rate_hint is None and s.return_mean_hint is None and s.regret_mean is None
    line = summary_line(s)
    assert "hint   -  " in line and "regret   -  " in line and "heldout 0.50/  -  " in line
