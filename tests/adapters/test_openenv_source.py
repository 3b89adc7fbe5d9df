"""An OpenEnv URL as a level of a run: checked over the wire, played, stored, scored and replayed like any
level; a server killed mid-run is an infrastructure failure, never the level's loss."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("spadegym.adapters.openenv_import", reason="the openenv extra is not installed")

from test_openenv import ENVS, serve_process  # noqa: E402

from spadegym.level import Level, Remote  # noqa: E402
from spadegym.loop import RunConfig, run  # noqa: E402
from spadegym.store import RunStore  # noqa: E402

SKILL = "Logical Deduction"


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"))  # noqa: SIM115


def test_a_remote_level_is_played_replayed_and_a_killed_server_counts_as_infrastructure(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_process(str(ENVS)) as (server, url):
        source = {"source": f"openenv:{url}", "share": 0.5, "reset_args": {"level_id": "number_guess"},
                  "send_reply": True, "skill": SKILL, "hint": "halve the range each guess"}
        config = RunConfig(rounds=2, agent="random", envs_per_round=2, plays=4, hint_plays=2, group_size=2,
                           skills=[SKILL], skills_per_round=1, tensorboard=False, sources=[source],
                           buffer={"min_fill": 2, "replay_fraction": 1.0, "retire_after": 0},
                           heldout={"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"]})
        run(config, out, console=quiet(), report=False)  # round 0: two new levels; round 1: both replayed
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        # round 2: the server is gone (the resume names the source's host: a stored one is never trusted)
        resumed = run(resume=out, rounds=3, settings={"sources": [source]}, console=quiet(), report=False)

    with RunStore.open(out) as store:
        [remote] = [row for row in store.environments() if row["kind"] == "remote"]
        proposal = next(p for p in store.proposals() if p["env_id"] == remote["env_id"])
        episodes = store.episodes(env_id=remote["env_id"], split="train")
        buffer = store.load_state("buffer")["levels"]
        store_level = store.levels([remote["env_id"]])[remote["env_id"]]
        rounds = store.rounds()
    # Checked over the wire, not by the gate; what the wire cannot check is said in the verdict.
    checks = {c["name"]: c for c in proposal["verdict"]["checks"]}
    assert proposal["valid"] and checks["reachable"]["passed"] and checks["seed_determinism"]["passed"]
    assert not checks["unchecked_sandboxed"]["passed"] and checks["unchecked_sandboxed"]["severity"] == "warning"
    assert remote["remote"]["reset_args"] == {"level_id": "number_guess"} and remote["source"] is None
    assert store_level.remote is not None and store_level.remote.url == url and store_level.hint.startswith("halve")
    assert remote["meta"]["source"] == f"openenv:{url}" and remote["skill"] == SKILL
    # Played by the run's agent in rounds 0 and 1 (a replay), with the hint in the hint arm, and stored.
    by_round: dict[int, list[dict]] = {}
    for episode in episodes:
        by_round.setdefault(episode["round"], []).append(episode)
    assert sorted(by_round) == [0, 1, 2] and all(len(by_round[n]) == 6 for n in by_round)
    for n in (0, 1):
        assert all(e["failure"] is None and len(e["turns"]) >= 1 for e in by_round[n])
        assert all(t["action"] in {str(i) for i in range(1, 13)} for e in by_round[n] for t in e["turns"])
        assert any("hint: halve the range" in e["turns"][0]["observation"] for e in by_round[n] if e["hinted"])
    # Round 2: the killed server lost every play: infrastructure, counted, and never scored as a loss.
    assert all(e["failure"] == "infra" for e in by_round[2])
    assert rounds[2]["infrastructure"] == {"infra_failures": 6, "remote_faults": 18}  # 3 tries of each reset
    assert "infrastructure" not in rounds[1]
    assert buffer[remote["env_id"]]["times_played"] == 2  # rounds 0 and 1 only
    assert [s.round for s in resumed.summaries] == [2] and rounds[2]["played"] == 2


def test_a_server_that_does_not_answer_is_proposed_again_later_not_refused() -> None:
    import asyncio

    from test_openenv import free_port

    from spadegym.designers.base import DesignContext
    from spadegym.designers.remote import RemoteLevelDesigner

    designer = RemoteLevelDesigner([Level(remote=Remote(url=f"http://127.0.0.1:{free_port()}"), skill=SKILL)])
    assert asyncio.run(designer.propose(DesignContext(skill=SKILL, count=2))) == []
    assert designer.cursor == 0  # still to propose: an unreachable server is infrastructure, not a bad level


def test_a_session_lost_mid_episode_is_rebuilt_on_a_new_server_by_replaying_the_episode() -> None:
    from spadegym.executor import LevelHost

    host = LevelHost(None)
    try:
        with serve_process(str(ENVS)) as (server, url):
            level = Level(remote=Remote(url=url, reset_args={"level_id": "number_guess"}, send_reply=True))
            handle, straight = host.open(level, "guess.py"), host.open(level, "guess.py")
            assert handle.request("reset", seed=4).ok and straight.request("reset", seed=4).ok
            assert not handle.request("step", action="6").value["terminated"]
            expected = [straight.request("step", action=a).value for a in ("6", "3")]
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
            port = int(url.rsplit(":", 1)[1])
        with serve_process(str(ENVS), port=port):  # the same server again, at the same address
            again = handle.request("step", action="3")
        assert again.ok and again.value == expected[1]  # reset(4) and step 6 replayed, then step 3
        assert host.counters()["remote_requests_replayed"] == 1 and "infra_failures" not in host.counters()
    finally:
        host.close()
