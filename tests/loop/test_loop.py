"""The self-play loop end to end: real sandbox, real learner, real store, tiny budgets."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from rich.console import Console

from spadegym.curriculum.diversity import PoolDiversity, transcript_text
from spadegym.errors import UserError
from spadegym.loop import RunCallback, RunConfig, run
from spadegym.store import RunStore

# The in-distribution suite alone, on four families (one the tiny learner wins at times): the other suites and the
# whole set of families have tests of their own (tests/loop/test_heldout_suites.py, tests/families/).
HELD_FAMILIES = ["take_away", "lamp_wiring", "hidden_order", "garden_causes"]
TINY = ["--set", "envs_per_round=4", "--set", "plays=4", "--set", "hint_plays=4", "--set", "group_size=4",
        "--set", "heldout.levels=ends", "--set", "heldout.seeds=1", "--set", "heldout.every=0",
        "--set", 'heldout.suites=["in_distribution"]', "--set", f"heldout.families={json.dumps(HELD_FAMILIES)}"]
TINY_CONFIG = {"envs_per_round": 4, "plays": 4, "hint_plays": 4, "group_size": 4,
               "heldout": {"every": 0, "levels": "ends", "seeds": 1, "suites": ["in_distribution"],
                           "families": HELD_FAMILIES}}


def spadegym(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True,
                          timeout=timeout)


def spadegym_here(*args: str) -> subprocess.CompletedProcess:
    """The same command line run in this process (typer's runner): its exit status, stdout and stderr, without
    a fresh interpreter's imports for each refusal."""
    from typer.testing import CliRunner

    from spadegym.cli import _register, app

    _register()
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # what a process would print as a traceback
    return subprocess.CompletedProcess(["spadegym", *args], result.exit_code, result.stdout, result.stderr)


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"))  # noqa: SIM115


def test_run_command_writes_rounds_store_and_report(tmp_path):
    out = tmp_path / "run"
    proc = spadegym("run", "--out", str(out), "--rounds", "2", "--seed", "1", *TINY)
    assert proc.returncode == 0, proc.stderr
    assert "round   1" in proc.stdout
    # Outside a terminal, progress within a round is printed as lines (here: when each phase ends).
    assert "round 0 play: 32/32 episodes" in proc.stdout
    assert re.search(r"round 1 heldout: (\d+)/\1 episodes", proc.stdout)
    assert proc.stdout.splitlines()[-1] == f"Report: {out / 'report.html'}"  # the last line says where
    with RunStore.open(out) as store:
        rounds = store.rounds()
        assert [r["round"] for r in rounds] == [0, 1]
        assert all(r["episodes"] == r["played"] * 8 for r in rounds)  # G + H plays per level
        assert rounds[-1]["heldout_success"] is not None  # the last round is always evaluated
        assert store.episode_count(split="train") == sum(r["episodes"] for r in rounds)
        assert len(store.environments()) == sum(r["valid"] for r in rounds)
        assert store.config["seed"] == 1
        diversity = rounds[-1]["diversity"]  # Vendi score per level of new levels and pool, code and play
        assert all(0 < diversity[k] <= 1 for k in ("new", "pool", "new_code", "new_play", "pool_code", "pool_play"))
        assert diversity["collapsed"] is False
    assert f"diversity {diversity['pool']:.2f}" in proc.stdout
    assert (out / "report.html").stat().st_size > 10_000


class Record(RunCallback):
    """Every call a run makes to its callbacks, in order, and its progress reports."""

    def __init__(self):
        self.calls, self.progress = [], []

    def on_start(self, start):
        self.calls.append(("start", start.first_round, start.rounds))

    def on_round(self, summary):
        self.calls.append(("round", summary.round))

    def on_note(self, message):
        self.calls.append(("note", message.split()[0]))

    def on_end(self):
        self.calls.append(("end",))

    def on_progress(self, progress):
        self.progress.append((progress.round, progress.phase, progress.done, progress.total))


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """Two rounds straight, as the library runs them by default: the result, what the callback saw and what was
    printed (one run for the tests of resume and of callbacks)."""
    hook, printed = Record(), io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = run(RunConfig(rounds=2, **{**TINY_CONFIG, "tensorboard": False}), tmp_path_factory.mktemp("straight"),
                     callbacks=[hook], report=False)
    return result, hook, printed.getvalue()


def test_resume_continues_exactly(tmp_path, straight):
    straight, _, _ = straight
    run(RunConfig(rounds=1, **TINY_CONFIG), tmp_path / "b", console=quiet(), report=False)
    resumed = run(resume=tmp_path / "b", rounds=2, console=quiet(), report=False)
    assert [s.round for s in resumed.summaries] == [1]
    keys = ("win_rate", "win_rate_hint", "regret_mean", "valid", "difficulty_mean", "heldout_success", "learner",
            "diversity")
    last, resumed_last = straight.summaries[-1].to_dict(), resumed.summaries[-1].to_dict()
    assert {k: last.get(k) for k in keys} == {k: resumed_last.get(k) for k in keys}


def test_a_full_buffer_drops_near_copies_and_a_resumed_run_drops_the_same(tmp_path):
    # Round 0 fills it, round 1 overflows it; on seed 1 the lowest-scoring level is not one of the two most alike.
    small = {**TINY_CONFIG, "seed": 1, "buffer": {"capacity": 4, "min_fill": 2}}
    run(RunConfig(rounds=2, **small), tmp_path / "a", console=quiet(), report=False)
    run(RunConfig(rounds=1, **small), tmp_path / "b", console=quiet(), report=False)
    run(resume=tmp_path / "b", rounds=2, console=quiet(), report=False)
    with RunStore.open(tmp_path / "b") as store:
        kept = {"b": store.load_state("buffer")["levels"]}
    with RunStore.open(tmp_path / "a") as store:
        kept["a"] = store.load_state("buffer")["levels"]
        made = {e["env_id"]: e for e in store.environments()}

        def first_play(env_id):
            turns = store.episodes(env_id=env_id, split="train", hinted=False, limit=1)[0]["turns"]
            return transcript_text([t["observation"] for t in turns], [t["action"] for t in turns])

        first = sorted(e for e in made if made[e]["round"] == 0)
        alike = PoolDiversity(first_play).kernel({e: made[e]["source"] for e in first})
    assert len(made) > 4 and len(kept["a"]) == 4  # levels left the full buffer
    assert {e for e in made if made[e]["round"] == 1} <= set(kept["a"])  # none before it was played
    np.fill_diagonal(alike, -1)
    twins = {first[i] for i in np.unravel_index(int(np.argmax(alike)), alike.shape)}
    assert len(twins - set(kept["a"])) == 1  # one of the two most alike levels left
    assert kept["a"] == kept["b"]  # the same levels left, with the same records, after a resume


def test_kill_minus_nine_loses_at_most_the_round_in_progress(tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "spadegym", "run", "--out", str(out), "--rounds", "40",
                             "--no-report", *TINY], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db = out / "run.sqlite"
    deadline = time.time() + 180
    done = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as conn:
                    done = conn.execute("SELECT count(*) FROM rounds").fetchone()[0]
            except sqlite3.Error:
                done = 0
        if done >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    assert done >= 2
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with RunStore.open(out) as store:
        last = store.last_complete_round()
        assert last is not None and last >= 1
        assert store.load_state("loop")["next_round"] == last + 1
    resumed = spadegym("run", "--resume", str(out), "--rounds", str(last + 2), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    with RunStore.open(out) as store:
        assert [r["round"] for r in store.rounds()] == list(range(last + 2))


def test_config_errors_are_one_sentence(tmp_path):
    bad = spadegym("run", "--set", "buffer.capcity=3", "--print-config")  # one as a process; the rest in this one
    assert bad.returncode == 2
    assert "'buffer.capcity' is not a known setting; did you mean 'buffer.capacity'?" in bad.stderr
    assert "Traceback" not in bad.stderr
    toml = tmp_path / "run.toml"
    toml.write_text('designer_reward = "regrets"\n')
    wrong = spadegym_here("run", "--config", str(toml), "--print-config")
    assert wrong.returncode == 2 and "did you mean 'regret'" in wrong.stderr
    toml.write_text("rounds = = 3\n")
    assert "does not parse" in spadegym_here("run", "--config", str(toml)).stderr
    ok = spadegym_here("run", "--set", "buffer.capacity=128", "--set", "designer=uniform", "--print-config")
    assert ok.returncode == 0
    config = json.loads(ok.stdout)
    assert config["buffer"]["capacity"] == 128 and config["designer"] == "uniform"
    assert config["buffer"]["replay_fraction"] == 0.0  # a baseline gets the buffer it is played with
    pool = json.loads(spadegym_here("run", "--set", "designer=fixed:easy", "--set", "buffer.retire_after=2",
                                    "--print-config").stdout)["buffer"]
    assert pool["replay_fraction"] == 1.0 and pool["balance"] == "none" and pool["retire_after"] == 2  # by hand wins
    typo = spadegym_here("run", "--set", "mutation.directd=false", "--print-config")
    assert typo.returncode == 2 and "'mutation.directd' is not a known setting" in typo.stderr
    assert "did you mean 'mutation.directed'" in typo.stderr and "Traceback" not in typo.stderr
    for bad in ("validation.random_episode=3", "llm_designer.repair_turn=1", "learner.hiden=8"):
        refused = spadegym_here("run", "--set", bad, "--print-config")
        assert refused.returncode == 2 and "is not a known setting; did you mean" in refused.stderr, bad
    family = spadegym_here("run", "--set", 'mutation.families=["take_awy"]', "--out", str(tmp_path / "typo"))
    assert family.returncode == 2 and "unknown family 'take_awy'; did you mean 'take_away'" in family.stderr
    assert not (tmp_path / "typo").exists()
    missing = spadegym_here("run", "--resume", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "holds no run" in missing.stderr


def test_a_run_that_fails_to_build_leaves_an_existing_directory_exactly_as_it_was(tmp_path):
    existing = tmp_path / "existing"
    (existing / "notes").mkdir(parents=True)
    (existing / "notes" / "todo.txt").write_text("keep me")
    before = sorted(existing.rglob("*"))
    bad_source = spadegym_here("run", "--out", str(existing), "--source", str(tmp_path / "no-pool"), *TINY)
    assert bad_source.returncode == 2 and "Traceback" not in bad_source.stderr
    assert " ".join(bad_source.stderr.split()).startswith(f"error: source '{tmp_path / 'no-pool'}'")
    assert sorted(existing.rglob("*")) == before and (existing / "notes" / "todo.txt").read_text() == "keep me"


def test_a_run_whose_server_is_unreachable_before_its_first_round_leaves_nothing_behind(tmp_path):
    new = tmp_path / "runs" / "deep" / "run"  # the parents too are the run's to make, and to take back
    # One quick retry (the run's ``llm`` settings reach the client): the default waits out 4, 7.5 s in all.
    config = RunConfig(rounds=1, designer="openai:m@http://127.0.0.1:9/v1", report_to=["tensorboard"],
                       llm={"retries": 1, "backoff_s": 0.05}, **TINY_CONFIG)
    with pytest.raises(UserError) as stopped:
        run(config, new, console=quiet(), report=False)
    said = str(stopped.value)
    assert said.startswith("cannot get a reply from the model server at http://127.0.0.1:9/v1")
    assert said.endswith("No round finished, so nothing of the run is kept.") and "--resume" not in said
    assert list(tmp_path.iterdir()) == []


def test_the_runs_llm_settings_reach_both_roles_clients():
    from spadegym.designers.registry import DESIGNERS, make_designer
    from spadegym.loop.agent import build_agent

    config = RunConfig(agent="openai:m@http://127.0.0.1:9/v1", designer="openai:m@http://127.0.0.1:9/v1",
                       llm={"retries": 1, "backoff_s": 0.25, "timeout_s": 9.0})
    agent = build_agent(config.agent, seed=0, config=config)
    designer = make_designer(config.designer, seed=0, **DESIGNERS.kind(config.designer).from_config(config))
    for endpoint in (agent.endpoint, designer.endpoint):
        assert (endpoint.retries, endpoint.backoff_s, endpoint.timeout_s) == (1, 0.25, 9.0)


def test_llm_roles_against_a_local_openai_server(tmp_path, fixtures_dir):
    """Designer and agent as LLMs over HTTP: a few config lines, the same loop."""
    from spadegym.designers import prompts
    from spadegym_testing.fake_server import FakeOpenAIServer

    env_source = (fixtures_dir / "envs" / "number_guess.py").read_text()
    designs = iter(range(1000))

    def model(request: dict, index: int) -> str:
        system = request["messages"][0]["content"]
        if system == prompts.HINT_SYSTEM:
            return "Use the higher/lower feedback to halve the remaining range."
        if system.startswith(prompts.DESIGN_SYSTEM[:40]):
            # Each design differs by a comment-free constant, so none is a duplicate.
            return f"Here it is.\n```python\n{env_source}\nVARIANT_{next(designs)} = 1\n```\n"
        return "I will guess the middle. \\boxed{5}"

    with FakeOpenAIServer(model) as server:
        config = RunConfig(rounds=1, designer=f"openai:designer@{server.url}",
                           agent=f"openai:agent@{server.url}", skills=["Logical Deduction"], skills_per_round=1,
                           envs_per_round=2, plays=2, hint_plays=2, group_size=2,
                           heldout={"every": 0, "levels": "ends", "seeds": 1, "hint": False,
                                    "families": ["hidden_order"]},
                           llm={"concurrency": 8, "max_tokens": 512})
        result = run(config, tmp_path / "llm", console=quiet(), report=False)
    summary = result.summaries[0]
    assert summary.valid == 2 and summary.episodes == 8
    with RunStore.open(tmp_path / "llm") as store:
        episodes = store.episodes(split="train")
        assert all(t["action"] == "5" for ep in episodes for t in ep["turns"])
        assert any(ep["hinted"] and "hint: Use the higher" in ep["turns"][0]["observation"] for ep in episodes)
        proposals = store.proposals()
        assert all(p["reward"] is not None for p in proposals)


@pytest.mark.parametrize("reward", ["regret", "learnability", "oracle_regret"])
def test_designer_reward_is_chosen_by_name(tmp_path, reward):
    result = run(RunConfig(rounds=1, designer_reward=reward, **TINY_CONFIG), tmp_path / reward,
                 console=quiet(), report=False)
    assert result.summaries[0].designer_reward_mean is not None
    # Each stored reward is the named function of the stored statistics, not another reward.
    expected = {
        "regret": lambda row: row["regret"],
        "learnability": lambda row: 4 * row["win_rate"] * (1 - row["win_rate"]),
        "oracle_regret": lambda row: row["oracle_regret"] if row["oracle_regret"] is not None else row["regret"],
    }[reward]
    with RunStore.open(tmp_path / reward) as store:
        rows = store.scores()
    assert rows
    for row in rows:
        assert row["designer_reward"] == pytest.approx(expected(row), abs=1e-9), row


def test_mutation_settings_reach_the_designer(tmp_path):
    config = RunConfig(rounds=1, seed=3, mutation={"directed": False, "new_max_level": 3},
                       **{**TINY_CONFIG, "envs_per_round": 2, "plays": 2, "hint_plays": 2, "group_size": 2})
    run(config, tmp_path / "run", console=quiet(), report=False)
    with RunStore.open(tmp_path / "run") as store:
        saved = store.load_state("designer")["config"]
    assert saved["directed"] is False and saved["new_max_level"] == 3


def test_every_component_picks_its_own_section(tmp_path):
    from spadegym.executor import make_executor
    from spadegym.loop.run import build_parts

    config = RunConfig(designer="openai:m@http://127.0.0.1:9/v1", llm_designer={"repair_turns": 0},
                       validation={"random_episodes": 3}, learner={"hidden": 4}, seed=5)
    with make_executor("local", config.sandbox) as box, RunStore.create(tmp_path / "run", config.model_dump(mode="json"), {}) as store:
        loop = build_parts(config, store, box)
        try:
            assert loop.designer.config.repair_turns == 0 and loop.designer._validation.random_episodes == 3
            assert loop.agent.config.hidden == 4 and loop.agent.config.seed == 5  # unset seed: the run's
        finally:
            loop.close()


def test_fresh_levels_are_shared_evenly_over_the_skills():
    from collections import Counter
    from types import SimpleNamespace

    from spadegym.loop.selfplay import SelfPlay, fresh_slots

    loop = SimpleNamespace(config=RunConfig())  # the default rotation: 3 of 6 skills per round
    given: Counter[str] = Counter()
    for n in range(12):
        active = SelfPlay.active_skills(loop, n)
        for skill, slots in zip(active, fresh_slots(n, 4, len(active), len(loop.config.skills))):
            given[skill] += slots
    assert len(given) == 6
    assert set(given.values()) == {8}  # 48 slots, 8 each (before: 12 for two skills, 6 for the rest)


def test_designer_parents_include_every_family():
    from spadegym.curriculum import LevelRecord
    from spadegym.loop.selfplay import _best_per_family

    ranked = [LevelRecord(f"a{i}", "s", f"ha{i}", 0, score=1 - i / 100, family="alpha") for i in range(20)]
    ranked += [LevelRecord(f"b{i}", "s", f"hb{i}", 0, score=0.1, family="beta") for i in range(3)]
    kept = _best_per_family(ranked, 8)
    assert [r.env_id for r in kept] == [f"a{i}" for i in range(8)] + ["b0", "b1", "b2"]


def test_heldout_seed_scores_runs_of_different_seeds_on_the_same_instances(tmp_path):
    def heldout_seeds(seed: int, heldout_seed: int | None) -> tuple[list[tuple[str, int]], dict]:
        # One set of unseen families for both run seeds, so that both hold the same suites.
        held = {**TINY_CONFIG["heldout"], "hint": False, "seed": heldout_seed, "unseen_families": ["knapsack"]}
        # Two levels of two plays to train on: the held-out suite is what this test is about.
        config = RunConfig(rounds=1, seed=seed, **{**TINY_CONFIG, "envs_per_round": 2, "plays": 2, "hint_plays": 2,
                                                   "group_size": 2, "heldout": held})
        result = run(config, tmp_path / f"run-{seed}-{heldout_seed}", console=quiet(), report=False)
        with RunStore.open(tmp_path / f"run-{seed}-{heldout_seed}") as store:
            episodes = store.episodes(split="heldout")
        return sorted((ep["env_id"], ep["seed"]) for ep in episodes), result.summaries[-1].to_dict()

    shared_a, summary = heldout_seeds(1, 7)
    shared_b, _ = heldout_seeds(2, 7)
    own, _ = heldout_seeds(2, None)
    assert shared_a and shared_a == shared_b  # stored, and the same instances
    assert own != shared_b
    # The suite's ends (level 0 and each family's top level) are also scored level by level.
    assert "0" in summary["heldout_by_level"] and len(summary["heldout_by_level"]) >= 2


def test_run_prints_nothing_and_calls_back_in_order(straight):
    _, hook, printed = straight
    assert printed == ""  # the library loop prints nothing by itself
    assert hook.calls == [("start", 0, 2), ("round", 0), ("round", 1), ("end",), ("note", "Run")]
    # Every episode of a round reports as it ends: the plays, then the last round's held-out evaluation.
    assert [p[2] for p in hook.progress if p[:2] == (0, "play")] == list(range(1, 33))
    assert {p[3] for p in hook.progress if p[:2] == (0, "play")} == {32}
    assert [p[1] for p in hook.progress if p[0] == 1][-1] == "heldout"
