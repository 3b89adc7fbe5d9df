"""A real self-play run whose designer proposes every hostile fixture completes its rounds.

The designer is a fixed list: each file of ``tests/fixtures/hostile`` once, as a
model might write it. The gate judges each, the valid ones are played and
replayed, and everything lands in a store that stays valid and reportable.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from pathlib import Path
from typing import Any

from spadegym.agents import make_agent
from spadegym.designers.base import Candidate, DesignContext, Feedback, Level, Lineage
from spadegym.executor import LocalExecutor
from spadegym.loop import RunConfig
from spadegym.loop.selfplay import SelfPlay
from spadegym.report import write_report
from spadegym.store import RunStore

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile"
FIXTURES = sorted(HOSTILE.glob("*.py"))


class FixtureDesigner:
    """Proposes the hostile fixture files in order, each once."""

    name = "fixtures"

    def __init__(self, files: list[Path]):
        self.left = deque(files)
        self.feedback: list[Feedback] = []

    async def propose(self, context: DesignContext) -> list[Candidate]:
        picked = [self.left.popleft() for _ in range(min(context.count, len(self.left)))]
        return [Candidate(Level(path.read_text(), context.skill, lineage=Lineage(operator="fixture", designer=self.name)),
                          candidate_id=f"fixture-{path.stem}") for path in picked]

    def update(self, feedback: list[Feedback]) -> None:
        self.feedback += feedback

    def state_dict(self) -> dict[str, Any]:
        return {"left": [str(p) for p in self.left]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.left = deque(Path(p) for p in state["left"])


def test_selfplay_survives_a_designer_that_proposes_every_hostile_fixture(tmp_path: Path) -> None:
    # Tight budgets keep the run short; every bound is the one the defaults apply, only smaller.
    config = RunConfig(
        seed=3, rounds=2, agent="random", envs_per_round=len(FIXTURES), skills_per_round=1,
        plays=2, hint_plays=1, group_size=1, heldout={"every": 0, "levels": "ends", "seeds": 1, "hint": False, "families": ["take_away", "code_breaker"]},
        sandbox={"step_timeout_s": 0.5, "load_timeout_s": 1.0, "episode_budget_s": 1.0, "max_episode_turns": 50,
                 "memory_mb": 512, "file_size_mb": 4, "scratch_mb": 16},
        validation={"verdict_budget_s": 2.0, "random_episodes": 4, "repeat_steps": 5},
        tensorboard=False,
    )
    designer = FixtureDesigner(FIXTURES)
    store = RunStore.create(tmp_path / "run", config.model_dump(mode="json"), {})
    try:
        with LocalExecutor(config.sandbox) as executor:
            loop = SelfPlay(config, store, executor, designer, make_agent("random", seed=3))
            try:
                summaries = [loop.round(n) for n in range(config.rounds)]
            finally:
                loop.close()
            zygote = executor.sandbox._zygote
            assert zygote is not None and zygote.poll() is None
    finally:
        store.close()

    assert [s.round for s in summaries] == [0, 1]
    assert not designer.left and len(designer.feedback) == len(FIXTURES)
    with RunStore.open(tmp_path / "run") as reopened:
        proposals = reopened.proposals()
        assert len(proposals) == len(FIXTURES)
        valid = {p["candidate"]["candidate_id"] for p in proposals if p["valid"]}
        assert valid == {"fixture-deep_tool_call", "fixture-surrogates", "fixture-terminal_escapes",
                         "fixture-shared_decimal_context", "fixture-shared_neighbours"}
        episodes = reopened.episodes(split="train")
        assert episodes and {e["env_id"] for e in episodes} == {p["env_id"] for p in proposals if p["valid"]}
        text = str(episodes) + str(proposals)
        assert "\x1b" not in text and "\ud800" not in text
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert "surrogates" in write_report(tmp_path / "run").read_text(encoding="utf-8")
