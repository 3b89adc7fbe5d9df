"""Exports round-trip through `datasets` (json, parquet, load_from_disk) with their content intact."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest
from synthetic_run import ENV_SOURCE, build_run

from spadegym.envfile.spade_export import for_reference
from spadegym.envfile.static import inspect_source
from spadegym.store import RunStore
from spadegym.store.export import ExportError, export_run

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "run"
    build_run(path, rounds=3).close()
    return path


@pytest.fixture(scope="module")
def store(run_dir):
    with RunStore.open(run_dir) as s:
        yield s


def _load(kind: str, path, tmp_path):
    return datasets.load_dataset(kind, data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))


def test_jsonl_environments_carry_code_hint_knobs_and_latest_scores(run_dir, store, tmp_path):
    (path,) = export_run(run_dir, "jsonl", "envs", tmp_path / "envs.jsonl")
    ds = _load("json", path, tmp_path)
    envs = store.environments()
    assert ds.num_rows == len(envs)
    latest = store.latest_scores()
    for row, env in zip(ds, envs):
        assert row["env_id"] == env["env_id"] and row["code"] == env["source"]
        assert row["hint"] == env["hint"] and row["skill"] == env["skill"]
        assert {k: v for k, v in row["knobs"].items() if v is not None} == env["knobs"]
        if env["env_id"] in latest:
            assert row["scores"]["regret"] == pytest.approx(latest[env["env_id"]]["regret"])
            assert row["scores"]["round"] == latest[env["env_id"]]["round"]
        else:
            assert row["scores"] is None


def test_jsonl_episodes_are_chat_messages(run_dir, store, tmp_path):
    (path,) = export_run(run_dir, "jsonl", "episodes", tmp_path / "episodes.jsonl")
    ds = _load("json", path, tmp_path)
    assert ds.num_rows == store.episode_count()
    stored = store.episodes()
    for row, ep in zip(ds, stored):
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"] * len(ep["turns"])
        assert row["messages"][1]["content"] == ep["turns"][0]["reply"]
        assert ("hint: " in row["messages"][0]["content"]) == row["hinted"]
        assert (row["return"], row["success"], row["env_id"], row["seed"]) == (
            ep["ret"],
            ep["success"],
            ep["env_id"],
            ep["seed"],
        )
    assert set(ds["split"]) == {"train", "heldout"}


def test_parquet_round_trips_every_table(run_dir, store, tmp_path):
    paths = export_run(run_dir, "parquet", out=tmp_path / "pq")
    assert [p.name for p in paths] == ["envs.parquet", "episodes.parquet", "rounds.parquet"]
    envs = _load("parquet", paths[0], tmp_path)
    assert [json.loads(k) for k in envs["knobs"]] == [e["knobs"] for e in store.environments()]
    episodes = _load("parquet", paths[1], tmp_path)
    assert episodes.num_rows == store.episode_count()
    assert episodes[0]["messages"][0]["role"] == "user"
    rounds = _load("parquet", paths[2], tmp_path)
    summaries = store.rounds()
    assert rounds["round"] == [1, 2, 3]
    assert rounds["win_rate"] == pytest.approx([s["win_rate"] for s in summaries])
    assert [json.loads(r) for r in rounds["refusals"]] == [s["refusals"] for s in summaries]


def test_hf_save_to_disk_loads_back(run_dir, store, tmp_path):
    (path,) = export_run(run_dir, "hf", "episodes", tmp_path / "hf_episodes")
    ds = datasets.load_from_disk(str(path))
    assert ds.num_rows == store.episode_count()
    assert set(ds.features) >= {"messages", "return", "success", "hinted", "env_id", "seed"}
    assert sum(ds["success"]) == sum(e["success"] for e in store.episodes())


def test_spade_pool_has_the_reference_layout(run_dir, store, tmp_path):
    (folder,) = export_run(run_dir, "spade", out=tmp_path / "pool")
    manifest = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    envs = {e["env_id"]: e for e in store.environments()}
    assert sorted(i["id"] for i in manifest) == sorted(envs) and all(i["exported"] for i in manifest)
    for entry in manifest:
        assert re.fullmatch(r"games/game_\d{5}_\d{3}_[a-z_]+\.py", entry["file"])
        assert entry["file"] == f"games/game_{entry['round']:05d}_{entry['index']:03d}_" \
            f"{entry['skill'].lower().replace(' ', '_')}.py"
        source = (folder / entry["file"]).read_text()
        assert source == for_reference(envs[entry["id"]]["source"])  # the file, and the shim after it
        assert inspect_source(source).skill == entry["skill"]
        assert entry["hint"] == envs[entry["id"]]["hint"]
        assert entry["sha256"] == hashlib.sha256(source.encode()).hexdigest()
    assert any(i["regret"] is not None for i in manifest)
    listed = (folder / "checksums.sha256").read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in listed) == sorted(e["file"] for e in manifest)
    checked = subprocess.run(["sha256sum", "-c", "checksums.sha256"], cwd=folder, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.count(": OK") == len(manifest)


def test_an_empty_run_exports_empty_tables(tmp_path):
    RunStore.create(tmp_path / "run", {}, {}).close()
    for fmt in ("jsonl", "parquet", "hf"):
        paths = export_run(tmp_path / "run", fmt, out=tmp_path / fmt)
        assert len(paths) == 3 and all(p.exists() for p in paths)
    assert (tmp_path / "jsonl" / "episodes.jsonl").read_text() == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"format": "csv"}, "unknown export format 'csv'"),
        ({"format": "jsonl", "what": "levels"}, "unknown --what 'levels'"),
        ({"format": "spade", "what": "episodes"}, "environments only"),
    ],
)
def test_bad_requests_are_one_clear_sentence(run_dir, kwargs, message):
    with pytest.raises(ExportError, match=message):
        export_run(run_dir, **kwargs)


def test_a_missing_optional_library_is_one_clear_sentence(run_dir, tmp_path):
    code = (
        "import sys; sys.modules['datasets'] = None\n"
        "from spadegym.store.export import export_run\n"
        f"export_run({str(run_dir)!r}, 'hf', 'rounds', {str(tmp_path / 'x')!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "the hf export needs the datasets package" in proc.stderr


def test_cli_export_prints_paths_and_reports_user_errors(run_dir, tmp_path):
    ok = subprocess.run(
        [
            "spadegym",
            "export",
            str(run_dir),
            "--format",
            "jsonl",
            "--what",
            "rounds",
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(tmp_path / "r.jsonl")
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3
    bad = subprocess.run(["spadegym", "export", str(tmp_path / "nope")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "does not exist" in " ".join(bad.stderr.split()) and "Traceback" not in bad.stderr


def test_a_remote_level_keeps_its_settings_in_datasets_and_is_left_out_of_a_pool_in_one_sentence(tmp_path):
    from spadegym.level import Level, Remote

    remote = Remote(url="http://127.0.0.1:8000", reset_args={"level_id": "guess"})
    local = ENV_SOURCE.format(family="maze", level=2, skill="Logical Deduction", knob="size", cls="Maze")
    levels = {"local": Level(local, "Logical Deduction"), "remote": Level(remote=remote, skill="Logical Deduction")}
    with RunStore.create(tmp_path / "run", {}, {}) as store, store.round(0) as tx:
        for env_id, level in levels.items():
            candidate = {"candidate_id": env_id, "source": level.source, "skill": "Logical Deduction"}
            tx.add_proposal(candidate, {"valid": True, "failed": []}, env_id, valid=True)
            tx.add_environment(env_id, level)
        tx.finish({})
    pool = subprocess.run(["spadegym", "export", str(tmp_path / "run"), "--format", "spade", "--what", "envs", "--out",
                           str(tmp_path / "pool")], capture_output=True, text=True)
    assert pool.returncode == 0, pool.stderr
    manifest = {entry["id"]: entry for entry in map(json.loads, (tmp_path / "pool" / "manifest.jsonl").read_text()
                                                    .splitlines())}
    assert manifest["local"]["exported"] and len(list((tmp_path / "pool").rglob("*.py"))) == 1
    assert not manifest["remote"]["exported"] and "OpenEnv server (http://127.0.0.1:8000)" in manifest["remote"]["reason"]
    said = " ".join(pool.stderr.split())
    assert said.startswith("left out of the pool: remote: a remote level") and "--format jsonl" in said
    (path,) = export_run(tmp_path / "run", "jsonl", "envs", tmp_path / "envs.jsonl")
    rows = {row["env_id"]: row for row in map(json.loads, path.read_text().splitlines())}
    assert rows["remote"]["kind"] == "remote" and rows["remote"]["code"] is None
    assert rows["remote"]["remote"] == remote.settings() and rows["local"]["kind"] == "file"
    with RunStore.open(tmp_path / "run") as store:
        assert store.levels() == levels  # the store reads back the values it wrote


def test_parquet_and_hf_name_the_export_extra_when_its_packages_are_missing(run_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if the export extra were not installed
    for format in ("parquet", "hf"):
        with pytest.raises(ExportError, match=r"pip install -e \".*\[export\]\""):
            export_run(run_dir, format, "envs", tmp_path / format)
