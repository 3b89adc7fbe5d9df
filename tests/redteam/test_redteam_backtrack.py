"""A minimal form that fails only by chance is no case; the search steps back up the shrink path.

Real parts: the target is ``FamilyPlayer`` behind the fake OpenAI-compatible server
(it misplays every three-pile take-away game and no other), the gate and the plays
run in the sandbox. The shrinking itself is replaced by one that went a step too
far (to two piles, which the target wins), as a graded weakness shrunk on four
hunt seeds can: confirmation refuses that form and keeps the one before it.
"""

from __future__ import annotations

import asyncio

from spadegym.agents import make_agent
from spadegym.designers.base import Candidate, Level, Params
from spadegym.designers.judge import Proposal
from spadegym.executor import make_executor
from spadegym.families import get_family
from spadegym.redteam import RedTeam, RedTeamConfig
from spadegym.redteam.confirmation import Confirmer
from spadegym.redteam.minimise import Minimal, level_size
from spadegym.redteam.probe import Probe
from spadegym_testing.fake_players import FamilyPlayer, read_nim
from spadegym_testing.fake_server import FakeOpenAIServer

FAMILY = get_family("take_away")
EASIEST = FAMILY.level_knobs(0)
FOUND = {**EASIEST, "piles": 3, "max_take": 3, "stones": 11}  # the level first found
BEFORE = {**FOUND, "stones": 7}  # shrunk one step: still three piles, still failing
TOO_FAR = {**BEFORE, "piles": 2}  # shrunk past the weakness: the target wins it


class OverShrinking(Confirmer):
    async def minimise(self, p: Proposal, probe: Probe) -> Minimal:
        probe = await self.prober.probe(FAMILY.render(TOO_FAR), None)
        steps = [{"knob": "stones", "from": 11, "to": 7, "still_fails": True, "level": BEFORE},
                 {"knob": "piles", "from": 3, "to": 2, "still_fails": True, "level": TOO_FAR}]
        return Minimal(FAMILY.render(TOO_FAR), dict(TOO_FAR), probe, steps, level_size("take_away", TOO_FAR))


def _hunt(backtrack: int) -> tuple[RedTeam, tuple[str, float]]:
    """One failure of the level first found, clustered by a search that over-shrinks it."""
    config = RedTeamConfig(target="openai:weak", families=["take_away"], backtrack=backtrack)

    async def hunt(url: str) -> tuple[RedTeam, tuple[str, float]]:
        target = make_agent(f"openai:weak@{url}")
        try:
            with make_executor("local") as executor:
                team = RedTeam(config, executor, target, designer=None)
                team.confirmer = OverShrinking(config, team.prober, team.memory, None)
                cand = Candidate(Level(FAMILY.render(FOUND), FAMILY.skill, params=Params("take_away", dict(FOUND))))
                found, probe = Proposal(cand, "r000-00", None, "h"), await team.prober.probe(cand.source, None)
                assert team.prober.fails(probe)
                return team, await team.confirmer.cluster(found, probe)
        finally:
            await target.aclose()

    def three_piles(opening: str) -> bool:
        return len(read_nim(opening).piles) == 3

    with FakeOpenAIServer(FamilyPlayer({"take-away game": three_piles})) as server:
        return asyncio.run(hunt(server.url))


def test_a_minimal_form_refused_on_fresh_seeds_gives_way_to_the_form_before_it() -> None:
    team, (key, novelty) = _hunt(backtrack=2)
    (case, minimal, original), = team.cases
    # The form before it is confirmed, then settled: its take limit of 3 is not what fails (the level just
    # below, limit 2, fails its fresh seeds too), three piles are (two piles are won).
    cause = {**BEFORE, "max_take": EASIEST["max_take"]}
    assert case.knobs == cause and "piles=3" in key and "stones=7" in key and novelty == 1.0
    settled = [s for s in case.shrink_steps if "settle" in s]
    assert [s["still_fails"] for s in settled] == [False, True, False]  # two piles, limit 2, then two piles again
    assert case.failure_rate >= 0.75 and case.size < case.original_size
    assert minimal == FAMILY.render(cause) and original == FAMILY.render(FOUND)
    assert team.memory.minimal[key] == ("take_away", cause)  # the confirmed form names the cluster


def test_a_refused_failure_is_counted_but_marks_no_region_as_known() -> None:
    team, (key, _) = _hunt(backtrack=0)  # no stepping back: the over-shrunk form is all there is
    assert not team.cases and key in team.confirmer.refused and "piles=2" in key and team.memory.counts[key] == 1
    # The levels above it are judged again (a graded weakness may fail there for real), not skipped.
    assert team.memory.known_cluster("take_away", FOUND) is None
