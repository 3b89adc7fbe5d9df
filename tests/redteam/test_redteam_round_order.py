"""Within a round, each proposal is judged and filed before the next is judged; a win above a known failure
is confirmed before it reopens the levels above that failure.

Real parts: the target is ``FamilyPlayer`` behind the fake OpenAI-compatible server (it loses every three-pile
take-away game), the gate and the plays run in the sandbox. The designer is a scripted one: its first answer
holds two levels, the second of which repeats the failure the first one finds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from spadegym.agents import make_agent
from spadegym.designers.base import Candidate, DesignContext, Level, Params
from spadegym.executor import make_executor
from spadegym.families import get_family
from spadegym.redteam import RedTeam, RedTeamConfig
from spadegym.redteam.clusters import cluster_key
from spadegym_testing.fake_players import FamilyPlayer, read_nim
from spadegym_testing.fake_server import FakeOpenAIServer

FAMILY = get_family("take_away")
EASIEST = FAMILY.level_knobs(0)
THREE_PILES = {**EASIEST, "piles": 3}  # the target loses these
HARDER = {**THREE_PILES, "stones": 11}  # at or above three piles: the same failure
TWO_PILES = {**EASIEST, "max_take": 3}  # won


def _candidate(knobs: dict[str, Any]) -> Candidate:
    return Candidate(Level(FAMILY.render(knobs), FAMILY.skill, params=Params("take_away", dict(knobs))))


class Scripted:
    """Answers its first call with ``first`` and each later call with the next of ``later``."""

    def __init__(self, first: list[dict[str, Any]], later: list[dict[str, Any]]):
        self.answers = [first] + [[knobs] for knobs in later]
        self.asked: list[int] = []

    async def propose(self, context: DesignContext) -> list[Candidate]:
        self.asked.append(context.count)
        return [_candidate(k) for k in self.answers.pop(0)] if self.answers else []


def _with_team(run: Callable[[RedTeam], Any], designer: Any = None, **settings: Any) -> Any:
    async def hunt(url: str) -> Any:
        target = make_agent(f"openai:player@{url}")
        try:
            with make_executor("local") as executor:
                config = RedTeamConfig(target="openai:player", families=["take_away"], **settings)
                return await run(RedTeam(config, executor, target, designer=designer))
        finally:
            await target.aclose()

    with FakeOpenAIServer(FamilyPlayer({"take-away game": lambda o: len(read_nim(o).piles) == 3})) as server:
        return asyncio.run(hunt(server.url))


def test_a_proposal_that_repeats_a_failure_found_earlier_in_its_round_is_asked_for_again() -> None:
    designer = Scripted([THREE_PILES, HARDER], later=[TWO_PILES])

    async def one_round(team: RedTeam) -> tuple[RedTeam, dict[str, Any]]:
        return team, await team.round(0, 2)

    team, summary = _with_team(one_round, designer, per_round=2, budget=2)
    assert designer.asked == [2, 1]  # the second level was replaced before it was judged
    assert team.avoided == 1 and summary["proposals"] == 2 and summary["failed"] == 1
    assert list(team.memory.counts.values()) == [1]  # the three-pile failure, found once
    assert ("take_away", TWO_PILES) in team.memory.passes  # the replacement was judged: won


def test_a_proposal_kept_from_a_known_failure_only_by_a_lucky_win_is_asked_for_again() -> None:
    # HARDER is recorded as won, though the target loses every three-pile game: its fresh seeds refute the win,
    # so a level above it repeats the three-pile failure and is replaced before it costs a proposal.
    designer = Scripted([{**HARDER, "max_take": 3}], later=[TWO_PILES])

    async def one_round(team: RedTeam) -> tuple[RedTeam, dict[str, Any]]:
        team.memory.add(cluster_key("take_away", THREE_PILES, "", ""), "take_away", THREE_PILES)
        team.memory.add_pass("take_away", HARDER)
        return team, await team.round(0, 1)

    team, summary = _with_team(one_round, designer, per_round=1, budget=1, confirm_seeds=3, confirm_plays=2)
    assert designer.asked == [1, 1] and team.avoided == 1
    assert ("take_away", HARDER) not in team.memory.passes and ("take_away", TWO_PILES) in team.memory.passes
    assert summary["proposals"] == 1 and summary["failed"] == 0


def test_a_win_above_a_known_failure_is_replayed_first_and_forgotten_when_it_fails_there() -> None:
    async def remember(team: RedTeam) -> tuple[list[Any], int, int]:
        team.memory.add(cluster_key("take_away", EASIEST, "", ""), "take_away", EASIEST)
        before = team.prober.episodes
        await team.confirmer.remember_win("take_away", THREE_PILES)  # strictly above the easiest game: replayed, and lost
        replayed = team.prober.episodes - before
        team.memory.minimal.clear()
        await team.confirmer.remember_win("take_away", TWO_PILES)  # above no known failure: taken as it is
        return team.memory.passes, replayed, team.prober.episodes - before - replayed

    passes, replayed, after = _with_team(remember, confirm_seeds=3, confirm_plays=2)
    assert replayed == 6 and after == 0
    assert passes == [("take_away", TWO_PILES)]



def test_every_play_of_a_family_level_reaches_the_model_of_the_target() -> None:
    # A proposal's plays, its shrink steps' and its confirmation replays' all say where the target loses.
    designer = Scripted([HARDER, TWO_PILES], later=[])

    async def one_round(team: RedTeam) -> RedTeam:
        await team.round(0, 2)
        return team

    team = _with_team(one_round, designer, per_round=2, budget=2)
    played = team.model.played["take_away"]
    assert sum(p.plays for p in played) == team.prober.episodes  # every play (none hinted: solution())
    assert len(played) > 2  # more than the two proposals: shrink steps and replays too
    chance = team.model.lost_chance
    assert chance("take_away", THREE_PILES, 4, 0.5) > 0.5 > chance("take_away", TWO_PILES, 4, 0.5)


def test_the_search_ends_once_its_suite_is_full() -> None:
    # Failures found past ``max_cases`` would not be kept, so the rest of the budget is not spent on them.
    designer = Scripted([THREE_PILES], later=[TWO_PILES, {**TWO_PILES, "stones": 11}])

    async def hunt(team: RedTeam) -> tuple[RedTeam, list[dict[str, Any]]]:
        return team, await team.run()

    team, summaries = _with_team(hunt, designer, per_round=1, budget=3, max_cases=1, confirm_seeds=3, confirm_plays=2)
    assert len(team.cases) == 1 and team.proposals == 1 and len(summaries) == 1
    assert designer.answers  # the levels it still had were never asked for
