"""Exports for the Hugging Face Hub: a dataset card beside the tables, and a push through the Hub's HTTP API.

The push goes to a local stand-in of the Hub's API (tests/store/hub_standin.py): no real Hub is reachable
from the tests, so what is checked is the wire format huggingface_hub speaks and what arrives.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
import yaml
from hub_standin import HubStandIn
from synthetic_run import build_run

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

from spadegym.store import RunStore  # noqa: E402
from spadegym.store.export import export_run  # noqa: E402


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("hub") / "run"
    build_run(path).close()
    return path


def card(text: str) -> tuple[dict, str]:
    """The YAML metadata and the Markdown body of a dataset card."""
    _, meta, body = text.split("---\n", 2)
    return yaml.safe_load(meta), body


def test_the_hf_export_writes_a_dataset_card_beside_the_tables(run_dir, tmp_path):
    export_run(run_dir, "hf", out=tmp_path / "hf")
    meta, body = card((tmp_path / "hf" / "README.md").read_text())
    assert {"spadegym", "self-play", "reinforcement-learning"} <= set(meta["tags"])
    assert meta["pretty_name"] == "spadegym run" and meta["size_categories"] == "n<1K"
    assert meta["license"] == "unknown" and meta["task_categories"] == ["reinforcement-learning", "text-generation"]
    with RunStore.open(run_dir) as store:
        episodes = store.episode_count()
    assert f"| `episodes` | {episodes:,} |" in body and '"designer": "mutation"' in body
    assert datasets.load_from_disk(str(tmp_path / "hf" / "envs")).num_rows > 0  # the card does not get in the way

    [single] = export_run(run_dir, "hf", "rounds", tmp_path / "rounds")
    assert (single / "README.md").is_file() and datasets.load_from_disk(str(single)).num_rows == 5


def test_push_to_hub_sends_the_tables_and_their_card_through_the_hub_api(run_dir, tmp_path):
    with HubStandIn() as hub:
        done = subprocess.run(
            [sys.executable, "-m", "spadegym", "export", str(run_dir), "--format", "hf", "--out", str(tmp_path / "hf"),
             "--push-to-hub", "me/levels", "--license", "cc-by-4.0"], capture_output=True, text=True, timeout=300,
            env={**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": "local", "HF_HOME": str(tmp_path / "hf-home")})
        assert done.returncode == 0, done.stderr[-3000:]
        assert not hub.unknown, hub.unknown
        pushed = hub.files["me/levels"]
    assert done.stdout.strip().endswith("/datasets/me/levels")
    assert sorted(pushed) == ["README.md", "data/envs.parquet", "data/episodes.parquet", "data/rounds.parquet"]
    meta, _ = card(pushed["README.md"].decode())
    assert meta["license"] == "cc-by-4.0" and "reinforcement-learning" in meta["task_categories"]
    assert {c["config_name"]: c["data_files"] for c in meta["configs"]} == {
        name: f"data/{name}.parquet" for name in ("envs", "episodes", "rounds")}
    with RunStore.open(run_dir) as store:
        expected = {"envs": len(store.environments(valid_only=True)), "episodes": store.episode_count(), "rounds": 5}
    for name, rows in expected.items():
        assert pq.read_table(io.BytesIO(pushed[f"data/{name}.parquet"])).num_rows == rows
    # The repo as datasets reads it: its card's configs name each table (datasets' manual configuration).
    datasets = pytest.importorskip("datasets")
    repo = tmp_path / "repo"
    for path, data in pushed.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    for name, rows in expected.items():
        assert datasets.load_dataset(str(repo), name, split="train", cache_dir=str(tmp_path / "cache")).num_rows == rows


def test_a_push_without_network_is_one_sentence_and_a_failed_exit(run_dir, tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on: every connection is refused, as with no network
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    done = subprocess.run(
        [sys.executable, "-m", "spadegym", "export", str(run_dir), "--what", "rounds", "--out", str(tmp_path / "r.jsonl"),
         "--push-to-hub", "me/levels"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HF_ENDPOINT": closed, "HF_TOKEN": "local", "HF_HOME": str(tmp_path / "hf-home")})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    [said] = done.stderr.strip().splitlines()
    assert said.startswith("error: cannot reach the Hub to push me/levels (") and said.endswith("try again.")
