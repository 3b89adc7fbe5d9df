"""Flakiness against a real target: a failure replayed on fresh seeds becomes a case only if it is real.

The target is ``FamilyPlayer`` behind the fake OpenAI-compatible server: optimal
take-away play, except in its blind spot. One target misplays every game; the
other only games whose first pile opens with five stones (about one in six),
so a level it happened to fail on the hunt's seeds fails by chance.
"""

from __future__ import annotations

import asyncio

import pytest

from spadegym.agents import make_agent
from spadegym.executor import make_executor
from spadegym.families import get_family
from spadegym.llm import FakeOpenAIServer
from spadegym.llm.fake_players import FamilyPlayer, read_nim
from spadegym.redteam.flakiness import confirm
from spadegym.redteam.probe import Prober


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
    assert result.plays == 16 and low <= result.failure_rate <= high
    assert result.kept is kept
    if kept:
        assert result.failure_rate >= 0.75 and low >= 0.3 and result.case_seeds(4) == result.lost_seeds[:4]
    else:
        assert 0 < result.failure_rate < 0.5 and low < 0.3 and result.won_seeds  # it did fail, now and then
