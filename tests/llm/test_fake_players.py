"""The scripted players behind the fake server: strong on their families, weak in planted blind spots."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from spadegym.agents import make_agent
from spadegym.families import get_family
from spadegym.level import Level
from spadegym.rollout import Play, RolloutConfig, run_episodes
from spadegym.sandbox import Sandbox
from spadegym_testing.fake_players import SOLVERS, FamilyPlayer
from spadegym_testing.fake_server import FakeOpenAIServer

FAMILIES = ["take_away", "knapsack", "hidden_order", "number_sequence", "motif_fill"]


def wins(player: FamilyPlayer, level: int = 1, seeds: int = 4) -> dict[str, int]:
    async def play() -> dict[str, int]:
        agent = make_agent(f"openai:player@{server.url}")
        try:
            envs = {f: Level(get_family(f).render(get_family(f).level_knobs(level)))
                    for f in FAMILIES}
            plays = [Play(f, s, hinted=False, group=s) for f in FAMILIES for s in range(seeds)]
            with Sandbox() as box:
                episodes = await run_episodes(box, envs, plays, agent, RolloutConfig())
        finally:
            await agent.aclose()
        won: dict[str, int] = defaultdict(int)
        for e in episodes:
            won[e.env_id] += e.success
        return {f: won[f] for f in FAMILIES}

    with FakeOpenAIServer(player) as server:
        return asyncio.run(play())


def test_the_family_player_wins_every_family_it_knows_and_loses_its_blind_spot() -> None:
    assert len(SOLVERS) == len(FAMILIES)
    assert wins(FamilyPlayer()) == dict.fromkeys(FAMILIES, 4)
    weak = FamilyPlayer({"knapsack": lambda opening: "item 5:" in opening})  # every knapsack level has 5+ items
    assert wins(weak) == {**dict.fromkeys(FAMILIES, 4), "knapsack": 0}
