"""The session every adapter wraps: reset/step of a level in a sandbox worker, spadegym's rules on the host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spadegym.adapters import LevelSourceError, PlaySession, PoolLevels, RunLevels, SessionError, open_levels
from spadegym.curriculum.buffer import BufferState, LevelRecord
from spadegym.level import Level, Params, Remote
from spadegym.rollout.runner import FORMAT_REMINDER
from spadegym.sandbox import Sandbox, SandboxConfig
from spadegym.store import RunStore

FIXTURES = Path(__file__).parents[1] / "fixtures"
ENVS = FIXTURES / "envs"

LEVEL = '''
class PickEnv:
    max_turns = 3
    hint = "pick {answer}"

    def reset(self, seed=None):
        return "pick a letter", {{}}

    def step(self, action):
        won = action == "{answer}"
        return ("yes" if won else "no"), float(won), won, False, {{}}
'''


def test_a_boxed_reply_is_played_and_the_return_rule_ends_the_episode(sandbox: Sandbox) -> None:
    with PlaySession(PoolLevels([ENVS / "number_guess.py"]), sandbox=sandbox) as session:
        first = session.reset(seed=4)
        assert first.info["level"] == "number_guess" and first.info["valid_actions"]
        moved = session.step("<think>\\boxed{1}</think> I say \\boxed{6}")
        assert moved.info["action"] == "6"
        while not moved.done:
            moved = session.step("\\boxed{6}")
        assert moved.info["return"] == (moved.reward if moved.terminated else 0.0)
        with pytest.raises(SessionError, match="call reset"):
            session.step("\\boxed{6}")


def test_a_reply_without_a_box_is_a_turn_with_the_reminder_and_counts_toward_the_budget(sandbox: Sandbox) -> None:
    with PlaySession(PoolLevels([ENVS / "number_guess.py"]), sandbox=sandbox) as session:
        session.reset(seed=0)
        for turn in range(1, 5):
            moved = session.step("six")
            assert moved.info["format_failure"] and moved.reward == 0.0 and moved.info["turn"] == turn
        assert moved.observation.endswith(FORMAT_REMINDER)
        assert moved.truncated and moved.info["return"] == 0.0  # max_turns = 4 in the file


def test_the_hint_arm_shows_the_hint_line_first_or_every_step(tmp_path: Path, sandbox: Sandbox) -> None:
    (tmp_path / "pick.py").write_text(LEVEL.format(answer="b"))
    levels = PoolLevels([tmp_path])
    with PlaySession(levels, sandbox=sandbox, hinted=True) as chat:
        assert chat.reset(seed=0).observation.endswith("hint: pick b")
        assert "hint:" not in chat.step("\\boxed{a}").observation
    with PlaySession(levels, sandbox=sandbox, hinted=True, hint_every_step=True, actions="raw") as every:
        every.reset(seed=0)
        assert every.step("a").observation == "no\nhint: pick b"


def test_an_environment_failure_ends_the_episode_as_data(sandbox: Sandbox) -> None:
    quick = Sandbox(SandboxConfig(step_timeout_s=0.5))
    try:
        with PlaySession(PoolLevels([FIXTURES / "hostile" / "busy_loop.py"]), sandbox=quick, actions="raw") as s:
            s.reset(seed=0)
            moved = s.step("go")
            assert moved.truncated and moved.info["failure"] == "timeout" and moved.info["return"] == 0.0
            assert s.reset(seed=1).observation == "ready"  # a fresh worker replaces the killed one
    finally:
        quick.close()


def test_a_level_that_does_not_load_is_one_sentence(tmp_path: Path, sandbox: Sandbox) -> None:
    (tmp_path / "broken.py").write_text("class BrokenEnv:\n    def reset(self, seed=None):\n        return 1/0\n"
                                        "    def step(self, a):\n        return '', 0.0, True, False, {}\n")
    with PlaySession(PoolLevels([tmp_path]), sandbox=sandbox) as session, \
            pytest.raises(SessionError, match="broken: reset failed"):
        session.reset(seed=0)


def test_levels_are_drawn_by_seed_or_named(sandbox: Sandbox) -> None:
    with PlaySession(open_levels(ENVS), sandbox=sandbox) as session:
        drawn = [session.reset(seed=s).info["level"] for s in range(6)]
        assert drawn == [session.reset(seed=s).info["level"] for s in range(6)]
        assert len(set(drawn)) > 1
        assert session.reset(seed=0, level_id="knapsack").info["level"] == "knapsack"
        with pytest.raises(LevelSourceError, match="no level named 'nope'"):
            session.reset(seed=0, level_id="nope")


def _round(store: RunStore, n: int, new: dict[str, str], buffer: BufferState) -> None:
    with store.round(n) as tx:
        for env_id, answer in new.items():
            tx.add_environment(env_id, Level(LEVEL.format(answer=answer), "Logical Deduction", f"pick {answer}",
                                             Params("pick", {"answer": answer})))
            buffer.levels[env_id] = LevelRecord(env_id, "Logical Deduction", env_id, n)
        tx.save_state("buffer", buffer.to_dict())
        tx.finish({"round": n})


def test_a_run_directory_is_read_live_new_levels_come_and_retired_ones_go(tmp_path: Path, sandbox: Sandbox) -> None:
    store = RunStore.create(tmp_path / "run", config={"buffer": {"retire_after": 2}}, versions={})
    buffer = BufferState()
    _round(store, 1, {"lvl-a": "a", "lvl-b": "b"}, buffer)
    levels = open_levels(tmp_path / "run")
    assert isinstance(levels, RunLevels)
    assert sorted(level.level_id for level in levels.levels()) == ["lvl-a", "lvl-b"]
    with store.round(2) as tx:  # a remote level of the run (an openenv: source) is played at its server, not here
        tx.add_environment("remote", Level(remote=Remote(url="http://127.0.0.1:9"), skill="Logical Deduction"))
        buffer.levels["remote"] = LevelRecord("remote", "Logical Deduction", "remote", 2)
        tx.save_state("buffer", buffer.to_dict())
        tx.finish({"round": 2})
    assert sorted(level.level_id for level in levels.levels()) == ["lvl-a", "lvl-b"]
    buffer.levels["lvl-a"].times_played = 2  # retired: it leaves replay, and the adapters with it
    buffer.levels["lvl-b"].score = 0.9
    _round(store, 3, {"lvl-c": "c"}, buffer)
    now = {level.level_id: level for level in levels.levels()}
    assert sorted(now) == ["lvl-b", "lvl-c"]
    assert now["lvl-b"].weight > now["lvl-c"].weight and now["lvl-c"].hint == "pick c"
    with PlaySession(levels, sandbox=sandbox, actions="raw") as session:
        session.reset(seed=0, level_id="lvl-c")
        assert session.step("c").info["return"] == 1.0
    store.close()


def test_a_folder_without_environment_files_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(LevelSourceError, match="no environment files"):
        open_levels(tmp_path)


def test_a_pool_folder_that_serve_reads_is_read_as_if_hostile(tmp_path):
    """A link out of the folder is refused (serve played the linked file); a link that stays inside is a level."""
    pool = tmp_path / "pool"
    pool.mkdir()
    source = sorted((Path(__file__).parents[1] / "fixtures" / "envs").glob("*.py"))[0].read_text()
    (pool / "a.py").write_text(source)
    (tmp_path / "outside.py").write_text(source)
    (pool / "b.py").symlink_to(tmp_path / "outside.py")
    with pytest.raises(LevelSourceError, match="b.py leads outside"):
        PoolLevels([pool])
    (pool / "b.py").unlink()
    os.mkfifo(pool / "c.py")
    with pytest.raises(LevelSourceError, match="c.py is not a regular file"):
        PoolLevels([pool])
    (pool / "c.py").unlink()
    (pool / "d.py").symlink_to(pool / "a.py")
    assert [level.level_id for level in PoolLevels([pool]).levels()] == ["a", "d"]
