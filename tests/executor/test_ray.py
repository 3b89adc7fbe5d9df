"""The Ray executor on a real local Ray cluster (one per module): same results as local, and faults survived.

Faults are real: the tests SIGKILL an actor's process (in a whole run, the
first actor seen at work; from the agent, between two pipelined rounds of
requests; while the actor validates) and check that the work is redone,
counted, and gives the same results as an undisturbed local run; and that the
killed actor's zygote and workers end with it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from spadegym.agents import make_agent  # noqa: E402
from spadegym.executor import LocalExecutor, RayConfig, make_executor  # noqa: E402
from spadegym.level import Level  # noqa: E402
from spadegym.loop import RunConfig, run  # noqa: E402
from spadegym.rollout import Play, run_episodes  # noqa: E402
from spadegym.store import RunStore  # noqa: E402

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
# Held out: two families' ends, enough to compare the held-out episodes of the two runs (the suites have their own tests).
TINY = {"envs_per_round": 4, "plays": 4, "hint_plays": 4, "group_size": 4, "tensorboard": False,
        "heldout": {"every": 0, "levels": "ends", "seeds": 1, "families": ["take_away", "code_breaker"]}}
RAY = RayConfig(actors=2, cpus_per_actor=0.5, retries=2)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """A real local Ray cluster with two CPUs, shared by the module's tests."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            found += [int(x) for x in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _episode_facts(episodes) -> list[tuple]:
    """What a rollout decided: per episode its instance, actions, observations and return (no timings)."""
    return [(e.env_id, e.seed, e.hinted, e.ret, e.failure, [(t.observation, t.action, t.reward) for t in e.turns])
            for e in episodes]


def _run_facts(run_dir: Path) -> tuple:
    with RunStore.open(run_dir) as store:
        envs = [(e["env_id"], e["source"]) for e in store.environments()]
        episodes = [(e["env_id"], e["seed"], e["hinted"], e["ret"], e["failure"], [t["action"] for t in e["turns"]])
                    for e in store.episodes()]  # the failure says why an episode differs (a retry given up, say)
        checkpoint = store.checkpoint_dir / store.load_state("learner")["checkpoint"]
    with np.load(checkpoint / "weights.npz") as weights:
        learner = {k: weights[k].copy() for k in weights.files}
    return envs, episodes, learner


def _busy_sandbox_actor() -> int | None:
    """The pid of a Ray sandbox actor whose zygote has workers right now, if there is one."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::SandboxActor") and any(_children(z) for z in _children(int(entry))):
            return int(entry)
    return None


def _kill_one_busy_actor(stop: threading.Event, killed: list[int]) -> None:
    while not stop.is_set() and not killed:
        pid = _busy_sandbox_actor()
        if pid is not None:
            _kill(pid)
            killed.append(pid)
        time.sleep(0.01)


def test_a_ray_run_that_loses_an_actor_gives_the_same_levels_episodes_and_learner_as_a_local_run(tmp_path):
    # Deadlines no loaded machine reaches: the actor restarted after the kill starts its sandbox during the run, and a
    # call cut off by a deadline would be a difference between the runs that this test is not about.
    patient = {**TINY, "sandbox": {"load_timeout_s": 120, "step_timeout_s": 60}}
    local = run(RunConfig(rounds=2, seed=3, **patient), tmp_path / "local", report=False)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_one_busy_actor, args=(stop, killed))
    killer.start()  # kills the first actor seen at work: validating, hosting episodes, or between the two
    try:
        remote = run(RunConfig(rounds=2, seed=3, executor="ray", ray=RAY, **patient), tmp_path / "ray", report=False)
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1
    assert sum(s.infrastructure.get("actors_lost", 0) for s in remote.summaries) == 1
    assert [s.valid for s in remote.summaries] == [s.valid for s in local.summaries]
    (envs_l, eps_l, learner_l), (envs_r, eps_r, learner_r) = _run_facts(tmp_path / "local"), _run_facts(tmp_path / "ray")
    assert envs_r == envs_l and len(envs_l) >= 4
    assert eps_r == eps_l and len(eps_l) > 2 * 4 * 8  # train and held-out episodes
    assert learner_r.keys() == learner_l.keys()
    assert all(np.array_equal(learner_r[k], learner_l[k]) for k in learner_l)


class _KillsAnActorAt:
    """The random agent, which SIGKILLs a process when it is asked for its ``turn``-th batch."""

    def __init__(self, pid: int, turn: int, still_running):
        self.inner, self.pid, self.turn, self.calls = make_agent("random", seed=5), pid, turn, 0
        self.name, self.keeps_history, self.needs_valid_actions, self.lockstep = "random", False, False, True
        self.still_running = still_running

    async def act(self, views):
        self.calls += 1
        if self.calls == self.turn:
            _kill(self.pid)
            assert self.still_running([self.pid]) == []
        return await self.inner.act(views)

    def end_episodes(self, keys):
        self.inner.end_episodes(keys)

    async def aclose(self):
        await self.inner.aclose()


def test_episodes_survive_a_killed_actor_unchanged_and_its_sandbox_processes_end(still_running):
    envs = {p.stem: Level(p.read_text()) for p in sorted(ENVS.glob("*.py"))[:4]}
    plays = [Play(env_id, seed, hinted=False) for env_id in envs for seed in (1, 2, 3)]
    with LocalExecutor() as local:
        expected = asyncio.run(run_episodes(local.sandbox, envs, plays, make_agent("random", seed=5)))
    with make_executor("ray", ray=RAY) as executor:
        # Open environments on every actor, so the one killed has a zygote and workers to leave behind.
        handles = [executor.host.open(level, f"{name}.py") for name, level in envs.items()]
        assert all(o.ok for o in executor.host.gather([h.submit("reset", seed=0) for h in handles]))
        victim = ray.get(executor.actors[0].processes.remote())
        assert victim["zygote"] and victim["workers"]
        agent = _KillsAnActorAt(victim["actor"], turn=2, still_running=still_running)
        episodes = asyncio.run(run_episodes(executor.host, envs, plays, agent))
        counters = executor.counters()
        for h in handles:
            h.close()
    assert still_running([victim["zygote"], *victim["workers"]]) == []
    assert counters["actors_lost"] == 1 and counters["requests_replayed"] >= 1
    assert "infra_failures" not in counters
    assert _episode_facts(episodes) == _episode_facts(expected)
    assert all(e.failure is None for e in episodes)


def test_without_retries_a_lost_episode_fails_as_infrastructure_and_is_never_scored(still_running):
    envs = {p.stem: Level(p.read_text()) for p in sorted(ENVS.glob("*.py"))[:2]}
    plays = [Play(env_id, seed, hinted=False) for env_id in envs for seed in (1, 2)]
    with LocalExecutor() as local:
        expected = _episode_facts(asyncio.run(run_episodes(local.sandbox, envs, plays, make_agent("random", seed=5))))
    with make_executor("ray", ray=RayConfig(actors=1, cpus_per_actor=0.5, retries=0)) as executor:
        victim = ray.get(executor.actors[0].processes.remote())["actor"]
        agent = _KillsAnActorAt(victim, turn=2, still_running=still_running)
        episodes = asyncio.run(run_episodes(executor.host, envs, plays, agent))
        counters = executor.counters()
    lost = [e for e in episodes if e.failure == "infra"]
    assert lost and not any(e.scored for e in lost)
    assert counters == {"actors_lost": 1, "infra_failures": len(lost)}
    assert [f for f in _episode_facts(episodes) if f[4] != "infra"] == [f for f, e in zip(expected, episodes)
                                                                        if e.failure != "infra"]


def test_validation_survives_a_killed_actor(fixtures_dir):
    sources = [p for p in sorted((fixtures_dir / "envs").glob("*.py"))][:3]
    jobs = [Level(p.read_text()) for p in sources]
    with LocalExecutor() as local:
        expected = [v.valid for v in local.validate(jobs, None)]
    with make_executor("ray", ray=RayConfig(actors=1, cpus_per_actor=0.5, retries=2)) as executor:
        actor = ray.get(executor.actors[0].processes.remote())["actor"]

        def kill_when_validating() -> None:  # the actor's zygote has workers: a verdict is being made
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(_children(z) for z in _children(actor)):
                    _kill(actor)
                    return
                time.sleep(0.005)

        killer = threading.Thread(target=kill_when_validating)
        killer.start()
        verdicts = executor.validate(jobs, None)
        killer.join()
        counters = executor.counters()
    assert [v.valid for v in verdicts] == expected == [True] * 3
    assert counters == {"actors_lost": 1, "validations_redone": 1}


def test_a_run_with_an_openenv_source_plays_and_scores_its_remote_level_beside_the_actors(tmp_path):
    pytest.importorskip("spadegym.adapters.openenv_import", reason="the openenv extra is not installed")
    from test_openenv import serve_process

    skill, out = "Logical Deduction", tmp_path / "run"
    with serve_process(str(ENVS)) as (_server, url):
        source = {"source": f"openenv:{url}", "share": 0.5, "reset_args": {"level_id": "number_guess"},
                  "send_reply": True, "skill": skill, "hint": "halve the range each guess"}
        config = RunConfig(rounds=2, agent="random", envs_per_round=2, plays=4, hint_plays=2, group_size=2,
                           skills=[skill], skills_per_round=1, tensorboard=False, sources=[source],
                           executor="ray", ray=RAY, buffer={"min_fill": 2, "replay_fraction": 1.0, "retire_after": 0},
                           heldout={"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"]})
        result = run(config, out, report=False)

    with RunStore.open(out) as store:
        [remote] = [row for row in store.environments() if row["kind"] == "remote"]
        [local] = [row for row in store.environments() if row["kind"] == "file"]
        episodes = {row["env_id"]: store.episodes(env_id=row["env_id"], split="train") for row in (remote, local)}
        scores = store.latest_scores()
    assert remote["meta"]["source"] == f"openenv:{url}"
    # Round 0 plays both new levels, round 1 replays them: the remote one over the wire by the run's agent,
    # the designer's on the actors; every play is scored.
    for env_id in (remote["env_id"], local["env_id"]):
        assert sorted(e["round"] for e in episodes[env_id]) == [0] * 6 + [1] * 6
        assert all(e["failure"] is None and e["turns"] for e in episodes[env_id])
        assert scores[env_id]["round"] == 1 and scores[env_id]["plays"] == 4 and scores[env_id]["plays_hint"] == 2
    assert all(t["action"] in {str(i) for i in range(1, 13)} for e in episodes[remote["env_id"]] for t in e["turns"])
    assert any("hint: halve the range" in e["turns"][0]["observation"] for e in episodes[remote["env_id"]] if e["hinted"])
    assert [s.played for s in result.summaries] == [2, 2] and not any(s.infrastructure for s in result.summaries)
