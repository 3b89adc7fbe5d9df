"""Flakiness against a real target: a failure replayed on fresh seeds becomes a case only if it is real.

The target is ``FamilyPlayer`` behind the fake OpenAI-compatible server: optimal
take-away play, except in its blind spot. One target misplays every game; the
other only games whose first pile opens with five stones (about one in six),
so a level it happened to fail on the hunt's seeds fails by chance.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from spadegym.agents import make_agent
from spadegym.executor import make_executor
from spadegym.families import get_family
from spadegym.redteam.flakiness import confirm, confirms, deciding_seeds, verdict_so_far
from spadegym.redteam.probe import Prober
from spadegym_testing.fake_players import FamilyPlayer, read_nim
from spadegym_testing.fake_server import FakeOpenAIServer


def sometimes(opening: str) -> bool:
    state = read_nim(opening)
    return state is not None and state.piles[0] == 5


def always(opening: str) -> bool:
    return True


@pytest.mark.parametrize(("spot", "kept"), [(always, True), (sometimes, False)])
def test_a_case_enters_the_suite_only_when_the_target_fails_it_on_fresh_seeds(spot, kept: bool) -> None:
    source = get_family("take_away").render(get_family("take_away").level_knobs(1))

    async def check():
        target = make_agent(f"openai:target@{server.url}")
        try:
            with make_executor("local") as executor:
                prober = Prober(executor, target, seed=0, plays=4, hint_plays=0, max_win_rate=0.5,
                                min_feasibility=0.5)
                return await confirm(prober, source, None, key="k", seeds=8, plays=2, min_failure_rate=0.3)
        finally:
            await target.aclose()

    with FakeOpenAIServer(FamilyPlayer({"take-away game": spot})) as server:
        result = asyncio.run(check())
    low, high = result.interval
    assert low <= result.failure_rate <= high
    assert result.kept is kept
    # Ten replays (five seeds) settle a target that loses them all; one that loses one in six is refused as
    # soon as it has won eight, two plays (a seed) at a time after the first ten.
    assert result.plays == 10 if kept else result.plays in (10, 12, 14, 16)
    if kept:
        assert result.failure_rate >= 0.75 and low >= 0.3 and result.case_seeds(4) == result.lost_seeds[:4]
    else:
        assert 0 < result.failure_rate < 0.5 and low < 0.3 and result.won_seeds  # it did fail, now and then


@pytest.mark.parametrize(("seeds", "plays", "min_failure_rate"), [(6, 2, 0.3), (8, 2, 0.3), (10, 1, 0.3), (4, 3, 0.3), (12, 1, 0.1)])
def test_replays_stopped_early_give_the_verdict_of_all_of_them(seeds: int, plays: int, min_failure_rate: float) -> None:
    total = seeds * plays
    first = deciding_seeds(seeds, plays, min_failure_rate) * plays
    assert first < total  # the first part is shorter than all the replays
    for outcomes in itertools.product((0, 1), repeat=total):  # 1: the target lost that replay
        full = confirms(sum(outcomes), total, min_failure_rate)
        for played in range(first, total, plays):  # the first part, then one seed more at a time
            assert verdict_so_far(sum(outcomes[:played]), played, total, min_failure_rate) in (None, full)
    # The first part settles the commonest outcomes: a target that loses every replay, or wins every one.
    assert verdict_so_far(first, first, total, min_failure_rate) is True
    assert verdict_so_far(0, first, total, min_failure_rate) is False
