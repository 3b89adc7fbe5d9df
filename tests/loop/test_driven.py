"""The curriculum a trainer drives: rows by ticket, draws that never wait, rounds closed in order, plays counted once.

In process, on a real run store and the real gate; the plays are made-up episodes (the trainer's side is
tested through TRL and verifiers in tests/adapters).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spadegym.errors import UserError
from spadegym.loop.driven import driven_curriculum
from spadegym.rollout import Episode
from spadegym.store import RunStore

CONFIG = Path(__file__).parents[2] / "examples" / "configs" / "curriculum.toml"
ROWS_PER_ROUND = 4  # 2 levels x (1 no-hint + 1 hinted group)


def played(draw, ret: float) -> Episode:
    # A client's report: it may name any level or seed; the service's record of the slot wins.
    return Episode("someone-else", 0, not draw.hinted, ret=ret, terminated=True)


def test_draws_run_ahead_of_reports_and_rounds_close_in_order(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with driven_curriculum(CONFIG, run, generations=2, trainer="test") as driven:
        # A batch larger than a round: every draw is answered before any play is reported.
        draws = [driven.draw(f"t{i // 2}") for i in range(2 * ROWS_PER_ROUND + 2)]
        assert [d.round for d in draws] == [0] * 8 + [1] * 2
        assert driven.status()["open_rounds"] == [0, 1]
        for first, second in zip(draws[::2], draws[1::2]):  # a ticket's two rollouts: one group
            assert (first.level_id, first.seed, first.hinted) == (second.level_id, second.seed, second.hinted)
        # Round 1's plays come in first: it waits for round 0.
        assert driven.report(draws[8].play_id, played(draws[8], 1.0)) == "ok"
        assert driven.status()["rounds_closed"] == 0
        for draw in draws[:8]:
            assert driven.report(draw.play_id, played(draw, 1.0 if not draw.hinted else 0.0)) == "ok"
        assert driven.status()["rounds_closed"] == 1 and driven.status()["open_rounds"] == [1]
        assert driven.report(draws[0].play_id, played(draws[0], 1.0)) == "duplicate"  # its round is closed
        assert driven.report(draws[8].play_id, played(draws[8], 1.0)) == "duplicate"
        with pytest.raises(UserError, match="never drawn"):
            driven.report("7:abc:1", played(draws[0], 1.0))
        assert driven.status()["reported"] == 9 and driven.status()["duplicates"] == 2
    with RunStore.open(run) as store:
        assert [r["round"] for r in store.rounds()] == [0]
        stored = store.episodes(round=0)
    assert len(stored) == 8
    # What was stored is the slot the curriculum handed out, with the reported return.
    assert {(e["env_id"], e["hinted"]) for e in stored} == {(d.level_id, d.hinted) for d in draws[:8]}
    assert all(e["ret"] == (0.0 if e["hinted"] else 1.0) for e in stored)

    # Resumed: the next launch goes on from round 1 (the unfinished round 1 of the first is lost with it).
    with driven_curriculum(CONFIG, run, generations=2, trainer="test") as driven:
        assert driven.draw("x").round == 1
