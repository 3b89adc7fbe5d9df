"""A failure above a won level is its own, not the known failure below that level, unless the win was luck.

Real parts: the target is ``FamilyPlayer`` behind the fake OpenAI-compatible server, the gate and the plays
run in the sandbox. The memory already holds a confirmed failure (three-pile take-away games) and a won
level above it (three piles with a take limit of 3); the level found has a take limit of 4.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from spadegym.agents import make_agent
from spadegym.designers.base import Candidate, Level, Params
from spadegym.designers.judge import Proposal
from spadegym.executor import make_executor
from spadegym.families import get_family
from spadegym.redteam import RedTeam, RedTeamConfig
from spadegym.redteam.clusters import cluster_key
from spadegym_testing.fake_players import FamilyPlayer, read_nim
from spadegym_testing.fake_server import FakeOpenAIServer

FAMILY = get_family("take_away")
KNOWN = {**FAMILY.level_knobs(0), "piles": 3}  # a confirmed failure
WON = {**KNOWN, "max_take": 3}  # remembered as won
FOUND = {**KNOWN, "max_take": 4, "stones": 11}
KNOWN_KEY = cluster_key("take_away", KNOWN, "", "")


def _hunt(misplays: Callable[[str], bool]) -> tuple[RedTeam, str]:
    """``FOUND`` clustered by a search that remembers ``KNOWN`` as failed and ``WON`` as won."""

    async def hunt(url: str) -> tuple[RedTeam, str]:
        target = make_agent(f"openai:player@{url}")
        try:
            with make_executor("local") as executor:
                team = RedTeam(RedTeamConfig(target="openai:player", families=["take_away"]), executor, target,
                               designer=None)
                team.memory.add(KNOWN_KEY, "take_away", KNOWN)
                team.memory.add_pass("take_away", WON)
                cand = Candidate(Level(FAMILY.render(FOUND), FAMILY.skill, params=Params("take_away", dict(FOUND))))
                found, probe = Proposal(cand, "r000-00", None, "h"), await team.prober.probe(cand.source, None)
                assert team.prober.fails(probe) and team.memory.known_cluster("take_away", FOUND) is None
                return team, (await team.confirmer.cluster(found, probe))[0]
        finally:
            await target.aclose()

    with FakeOpenAIServer(FamilyPlayer({"take-away game": misplays})) as server:
        return asyncio.run(hunt(server.url))


def test_a_failure_above_a_won_level_shrinks_to_its_own_cause_without_replaying_the_known_one() -> None:
    # The target loses three piles unless it may take 3 stones: a take limit of 4 is a failure of its own.
    team, key = _hunt(lambda opening: len(read_nim(opening).piles) == 3 and read_nim(opening).max_take != 3)
    (case, _, _), = team.cases
    assert case.knobs == {**KNOWN, "max_take": 4} and key == case.cluster != KNOWN_KEY
    assert team.memory.counts[KNOWN_KEY] == 1
    skipped = [s for s in case.shrink_steps if s.get("explained_by")]
    assert skipped and all(s["explained_by"] == KNOWN_KEY and s["level"]["max_take"] == 2 for s in skipped)
    assert ("take_away", WON) in team.memory.passes  # replayed on fresh seeds, and won again


def test_a_lucky_win_is_replayed_forgotten_and_the_failure_joins_the_known_one() -> None:
    # The target loses every three-pile game: the remembered win was luck.
    team, key = _hunt(lambda opening: len(read_nim(opening).piles) == 3)
    assert key == KNOWN_KEY and not team.cases and team.memory.counts[KNOWN_KEY] == 2
    assert ("take_away", WON) not in team.memory.passes
