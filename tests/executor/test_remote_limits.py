"""Remote levels get the limits of sandboxed files: a hostile OpenEnv server (``tests/fixtures/hostile_openenv.py``,
on 127.0.0.1) breaks one rule per level, and each break is that level's failure in one sentence, never a win,
a hang or an unscored episode the server chose."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("websockets.asyncio.server", reason="the openenv extra is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))

from hostile_openenv import HostileServer  # noqa: E402

from spadegym.agents import ScriptedAgent  # noqa: E402
from spadegym.executor import LevelHost  # noqa: E402
from spadegym.executor.openenv import OpenEnvHost, wire_check  # noqa: E402
from spadegym.level import Level, Remote  # noqa: E402
from spadegym.rollout import Episode, Play, RolloutConfig, run_episodes  # noqa: E402
from spadegym.sandbox import SandboxConfig  # noqa: E402

LIMITS = SandboxConfig(line_limit=65_536, episode_budget_s=1.0, episode_chars=2048)


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    with HostileServer() as hostile:
        yield hostile


def play(url: str, level: str, episodes: int = 1, infra_limit: int = 8,
         guesses: str = "1245") -> tuple[list[Episode], OpenEnvHost]:
    """Episodes of one remote level, its sessions with ``LIMITS``; the agent guesses wrong until it runs out."""
    remote = OpenEnvHost(config=LIMITS, infra_limit=infra_limit)
    host = LevelHost(None, remote=remote)
    levels = {level: Level(remote=Remote(url=url, reset_args={"level_id": level}, max_turns=6))}
    agent = ScriptedAgent(list(guesses) * 3)
    try:
        result = asyncio.run(run_episodes(host, levels, [Play(level, seed) for seed in range(episodes)], agent,
                                          RolloutConfig(max_turns=6, concurrency=1)))
    finally:
        host.close()
    return result, remote


def test_an_honest_server_plays_by_the_rules(server: HostileServer) -> None:
    [episode], host = play(server.url, "honest", guesses="3")
    assert episode.failure is None and episode.ret == 1.0 and host.counters() == {}


@pytest.mark.parametrize(("level", "category", "says"), [
    ("huge_observation", "too_large", "over the limit of 65,536 bytes"),
    ("huge_menu", "too_large", "5,000 entries, above the limit of 4,096"),
    ("nan_reward", "protocol", "not JSON"),
    ("garbage", "protocol", "not JSON"),
    ("unasked", "protocol", "no request asked for"),
    ("chatty", "too_large", "episode_chars"),
])
def test_a_reply_that_breaks_a_rule_is_the_levels_failure_not_retried(server: HostileServer, level: str,
                                                                       category: str, says: str) -> None:
    [episode], host = play(server.url, level)
    assert episode.failure == category and says in episode.failure_message and episode.ret == 0.0
    assert "remote_faults" not in host.counters()  # scored at once: never retried into an unscored episode


def test_a_slow_server_runs_out_of_the_episodes_time_budget(server: HostileServer) -> None:
    started = time.perf_counter()
    [episode], _host = play(server.url, "slow")
    assert episode.failure == "timeout" and "sandbox.episode_budget_s = 1s" in episode.failure_message
    assert time.perf_counter() - started < 6  # 1 s of budget, not 6 turns x 0.4 s plus retries


def test_a_redirect_to_another_origin_is_refused_and_one_within_the_origin_followed(server: HostileServer) -> None:
    other = server.other
    assert other is not None
    before = other.sessions
    [episode], _host = play(server.url + "/elsewhere", "honest", guesses="3")
    assert episode.failure == "protocol" and "redirected to another origin" in episode.failure_message
    assert other.sessions == before  # never played on the server it pointed to
    [episode], _host = play(server.url + "/moved", "honest", guesses="3")
    assert episode.failure is None and episode.ret == 1.0


def test_a_server_that_drops_its_episodes_is_retired_past_its_bound(server: HostileServer) -> None:
    episodes, host = play(server.url, "drops", episodes=4, infra_limit=2)
    assert [e.failure for e in episodes] == ["infra", "infra", "crash", "crash"]
    assert "more than the 2 infrastructure failures" in episodes[3].failure_message
    assert host.counters()["infra_failures"] == 3 and host.counters()["levels_retired"] == 1


def test_the_gate_checks_a_remote_levels_replies_against_the_sandboxs_limits(server: HostileServer) -> None:
    honest = wire_check(Remote(url=server.url, reset_args={"level_id": "honest"}), config=LIMITS)
    assert honest.ok, honest.failed
    menu = wire_check(Remote(url=server.url, reset_args={"level_id": "huge_menu"}), config=LIMITS)
    assert "5,000 entries" in menu.failed["replies_in_limits"]
    elsewhere = wire_check(Remote(url=server.url + "/elsewhere", reset_args={"level_id": "honest"}), config=LIMITS)
    assert not elsewhere.ok
