"""The run store: create/open, one transaction per round, reads."""

from __future__ import annotations

import sqlite3

import pytest
from synthetic_run import build_run

from spadegym.level import Level, Params
from spadegym.rollout.records import Episode, Turn
from spadegym.store import DB_NAME, RunStore, StoreError


def _store(tmp_path) -> RunStore:
    return RunStore.create(tmp_path / "run", config={"rounds": 3}, versions={"spadegym": "0.1.0"})


def _episode(env_id: str, ret: float, failure: str | None = None) -> dict:
    ep = Episode(
        env_id=env_id, seed=3, hinted=False, turns=[Turn("obs", "\\boxed{1}", "1")], ret=ret, failure=failure
    )
    return {**ep.to_dict(), "split": "train"}


def test_create_then_open_keeps_config_and_versions(tmp_path):
    _store(tmp_path).close()
    store = RunStore.open(tmp_path / "run")
    assert store.config == {"rounds": 3}
    assert store.versions == {"spadegym": "0.1.0"}
    assert store.last_complete_round() is None
    assert store.rounds() == [] and store.environments() == [] and store.episodes() == []


def test_store_uses_wal_foreign_keys_and_a_schema_version(tmp_path):
    _store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "run" / DB_NAME)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(2,)]


def test_create_refuses_a_directory_that_holds_a_run(tmp_path):
    _store(tmp_path).close()
    with pytest.raises(StoreError, match="already holds a run"):
        _store(tmp_path)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "does not exist"),
        (lambda d: d.mkdir(), "run.sqlite is missing"),
        (
            lambda d: (d.mkdir(), (d / DB_NAME).write_bytes(b"this is not sqlite" * 100)),
            "not a readable run store",
        ),
        (
            lambda d: (d.mkdir(), sqlite3.connect(d / DB_NAME).execute("CREATE TABLE x (a)")),
            "not a spadegym run store",
        ),
    ],
)
def test_open_explains_a_missing_or_corrupt_run_in_one_sentence(tmp_path, setup, message):
    run_dir = tmp_path / "run"
    setup(run_dir)
    with pytest.raises(StoreError, match=message) as info:
        RunStore.open(run_dir)
    assert str(info.value).count(". ") == 0 and str(info.value).endswith(".")
    assert str(run_dir) in str(info.value)


def test_a_round_is_all_or_nothing(tmp_path):
    store = _store(tmp_path)
    with pytest.raises(ZeroDivisionError), store.round(1) as tx:
        tx.add_environment("e1", Level("src", "Optimization"))
        tx.add_episodes([_episode("e1", 1.0)])
        tx.save_state("buffer", {"levels": ["e1"]})
        1 / 0  # noqa: B018 - the loop crashing mid-round
    assert store.last_complete_round() is None
    assert store.environments() == [] and store.episodes() == [] and store.load_state("buffer") is None


def test_a_round_without_finish_writes_nothing(tmp_path):
    store = _store(tmp_path)
    with pytest.raises(RuntimeError, match="without tx.finish"), store.round(1) as tx:
        tx.add_episodes([_episode("e1", 1.0)])
    assert store.episodes() == [] and store.last_complete_round() is None


def test_finished_rounds_are_visible_in_order_and_cannot_be_rewritten(tmp_path):
    store = _store(tmp_path)
    for n in (1, 2):
        with store.round(n) as tx:
            tx.save_state("rng", {"n": n})
            tx.finish({"win_rate": n / 10})
    assert [r["round"] for r in store.rounds()] == [1, 2]
    assert store.rounds()[1]["win_rate"] == 0.2
    assert store.load_state("rng") == {"n": 2}
    with pytest.raises(ValueError, match="already complete"), store.round(2):
        pass


def test_episodes_round_trip_and_filter(tmp_path):
    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.add_episodes([_episode("a", 1.0), _episode("b", 0.0), _episode("a", -1.0, failure="timeout")])
        tx.add_episodes([{**_episode("a", 1.0), "hinted": True, "split": "heldout"}])
        tx.finish({})
    a = store.episodes(env_id="a", split="train")
    assert [e["ret"] for e in a] == [1.0, -1.0]
    assert [e["success"] for e in a] == [True, False]  # Episode.success: failures never succeed
    assert (
        Episode.from_dict({k: v for k, v in a[0].items() if k not in ("round", "split", "success")})
        .turns[0]
        .reply
        == "\\boxed{1}"
    )
    assert len(store.episodes(split="heldout", hinted=True)) == 1
    assert len(store.episodes(limit=2)) == 2
    assert store.episode_count(env_id="a") == 3


def test_episode_split_is_checked(tmp_path):
    store = _store(tmp_path)
    with pytest.raises(ValueError, match="split"), store.round(1) as tx:
        tx.add_episodes([{**_episode("a", 1.0), "split": "test"}])


def test_scores_keep_unknown_keys_in_extra_and_nan_as_null(tmp_path):
    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.add_scores([{"env_id": "a", "win_rate": 0.25, "regret": float("nan"), "staleness": 2}])
        tx.finish({})
    (row,) = store.scores("a")
    assert row["win_rate"] == 0.25 and row["regret"] is None and row["extra"] == {"staleness": 2}


def test_proposal_reward_can_be_set_in_a_later_round(tmp_path):
    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.add_proposal({"candidate_id": "c1", "source": "x"}, {"valid": True}, "e1", valid=True)
        tx.add_proposal(
            {"candidate_id": "c2", "source": "y"}, {"valid": False, "failed": ["timeout"]}, None, valid=False
        )
        tx.finish({})
    with store.round(2) as tx:
        tx.set_proposal_reward("c1", 0.75)
        with pytest.raises(KeyError):
            tx.set_proposal_reward("nope", 1.0)
        tx.finish({})
    props = store.proposals()
    assert [(p["candidate_id"], p["valid"], p["reward"]) for p in props] == [
        ("c1", True, 0.75),
        ("c2", False, None),
    ]
    assert props[1]["verdict"]["failed"] == ["timeout"]


def test_environment_ids_are_unique_and_invalid_ones_are_hidden_by_default(tmp_path):
    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.add_environment("e1", Level("src", "Optimization", "h", Params("maze", {"size": 3})))
        tx.add_environment("bad", Level("src"), valid=False)
        with pytest.raises(ValueError, match="already in the store"):
            tx.add_environment("e1", Level("src", "Optimization", "h", Params("maze")))
        tx.finish({})
    assert [e["env_id"] for e in store.environments()] == ["e1"]
    assert len(store.environments(valid_only=False)) == 2
    assert store.environment("e1")["knobs"] == {"size": 3}


def test_json_values_accept_numpy_scalars(tmp_path):
    np = pytest.importorskip("numpy")
    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.save_state("learner", {"lr": np.float32(0.5), "steps": np.int64(3), "w": np.zeros(2)})
        tx.finish({"win_rate": np.float64(0.1)})
    assert store.load_state("learner") == {"lr": 0.5, "steps": 3, "w": [0.0, 0.0]}


def test_synthetic_run_reads_back_consistently(tmp_path):
    store = build_run(tmp_path / "run", rounds=3)
    assert store.last_complete_round() == 3
    assert len(store.environments()) == 12 and len(store.proposals()) == 15
    for summary in store.rounds():
        n = summary["round"]
        assert store.episode_count(round=n, split="train") == summary["episodes"]
        assert {s["round"] for s in store.scores()} == {1, 2, 3}
    assert store.load_state("buffer")["round"] == 3


@pytest.mark.parametrize("settings", ['{"url": "ftp://x"}', '{"url": "http://127.0.0.1:9", "max_turns": "many"}', "null"])
def test_a_remote_level_altered_in_the_store_is_one_sentence(tmp_path, settings):
    from spadegym.level import Remote
    from spadegym.store.runstore import level_of

    store = _store(tmp_path)
    with store.round(1) as tx:
        tx.add_environment("e1", Level(remote=Remote(url="http://127.0.0.1:9"), skill="Optimization"))
        tx.finish({})
    store.close()
    db = sqlite3.connect(tmp_path / "run" / DB_NAME)
    db.execute("UPDATE environments SET remote = ? WHERE env_id = 'e1'", (settings,))
    db.commit()
    db.close()
    with RunStore.open(tmp_path / "run") as reopened, pytest.raises(StoreError, match="'e1' .* malformed") as caught:
        level_of(reopened.environment("e1"))
    assert "\n" not in str(caught.value)
