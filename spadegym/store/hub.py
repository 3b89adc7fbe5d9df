"""The Hugging Face Hub: push an exported run (its tables as parquet and its dataset card) as a dataset repo.

    push_to_hub(run_dir, "me/my-levels")          # the tables as parquet files and the card, in one commit
    push_tables("me/my-suite", {"envs": rows}, source_facts(...))   # any rows shaped like a run's export

The card is store/card.py's. ``push_to_hub`` writes the tables as ``data/<table>.parquet`` (the layout
``datasets.load_dataset(repo, table)`` reads) and uploads them with the card
through ``huggingface_hub`` (``HF_TOKEN``, ``HF_ENDPOINT`` as that library reads
them). The tests push to a local stand-in of the Hub's HTTP API, not to the Hub.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import install_hint
from .card import DEFAULT_LICENSE, TABLES, dataset_card, run_source, source_facts
from .export import ExportError, environment_rows, episode_rows, round_rows, write_rows
from .runstore import RunStore

__all__ = ["push_folder", "push_tables", "push_to_hub", "source_facts"]


def push_tables(repo_id: str, tables: dict[str, Iterable[dict[str, Any]]], source: dict[str, Any], *,
                private: bool = False, license: str = DEFAULT_LICENSE) -> str:
    """Push ``tables`` (name -> rows shaped like a run's export) as parquet files with their card to the dataset
    repo ``repo_id``, in one commit; returns the repo's URL."""
    try:
        import huggingface_hub  # noqa: F401
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError("pushing to the Hub needs huggingface_hub and pyarrow; install them with "
                          f"{install_hint('export')}.") from None
    with tempfile.TemporaryDirectory(prefix="spadegym-push-") as staging:
        folder = Path(staging)
        files, counts = {}, {}
        for name, rows in tables.items():
            path = write_rows(name, rows, "parquet", folder / "data" / f"{name}.parquet")
            files[name], counts[name] = f"data/{name}.parquet", pq.ParquetFile(path).metadata.num_rows
        (folder / "README.md").write_text(dataset_card(counts, source, files, license), encoding="utf-8")
        return push_folder(folder, repo_id, "dataset", private=private)


def push_folder(folder: Path, repo_id: str, repo_type: str, *, private: bool = False) -> str:
    """Upload ``folder`` to the Hub repo ``repo_id`` (a ``dataset`` or a ``model``) in one commit, creating the
    repo if needed; returns its URL. A refusal or no network is one sentence."""
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:
        raise ExportError("pushing to the Hub needs huggingface_hub; install it with "
                          f"{install_hint('export')}.") from None
    api = HfApi()
    try:
        url = api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                          commit_message="spadegym export")
    except HfHubHTTPError as exc:
        raise ExportError(f"the Hub refused the push to {repo_id} ({' '.join(str(exc).split())[:200]}); check "
                          "the repo name and that HF_TOKEN may write to it.") from None
    except _connection_errors() as exc:  # no network, a proxy that refuses, a name that does not resolve
        raise ExportError(f"cannot reach the Hub to push {repo_id} ({_cause(exc)}); check the network "
                          "(HF_ENDPOINT, proxies) and try again.") from None
    return str(url)


def _connection_errors() -> tuple[type[BaseException], ...]:
    """What a request that got no answer raises, in whichever HTTP client huggingface_hub uses (httpx, its httpx2
    fork, requests), and OSError."""
    found: list[type[BaseException]] = [OSError]
    for module, name in (("httpx", "TransportError"), ("httpx2", "TransportError"), ("requests", "ConnectionError")):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _cause(exc: BaseException) -> str:
    """A connection failure in a few words: its type and first line, bounded."""
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def push_to_hub(run_dir: str | Path, repo_id: str, *, private: bool = False, tables: list[str] | None = None,
                license: str = DEFAULT_LICENSE) -> str:
    """Push a run's tables (all three, or ``tables``) and their card to the dataset repo ``repo_id``."""
    readers = {"envs": environment_rows, "episodes": episode_rows, "rounds": round_rows}
    with RunStore.open(run_dir) as store:
        rows = {name: readers[name](store) for name in tables or list(TABLES)}
        pool = (store.config.get("pool") or {}).get("path") if isinstance(store.config.get("pool"), dict) else None
        if "envs" in rows:
            rows["envs"] = list(without_local_paths(rows["envs"], pool))
        return push_tables(repo_id, rows, run_source(store), private=private, license=license)


def without_local_paths(rows: Iterable[dict[str, Any]], pool: str | None) -> Iterator[dict[str, Any]]:
    """Environment rows whose ``meta`` names no absolute local path: a pushed dataset is public, and a path on this
    machine says who ran it and how their disk is laid out; a file of the pool keeps its path relative to the pool,
    any other its name."""
    for row in rows:
        meta = row.get("meta")
        if isinstance(meta, dict):
            row = {**row, "meta": {key: _portable(value, pool) for key, value in meta.items()}}
        yield row


def _portable(value: Any, pool: str | None) -> Any:
    if not isinstance(value, str) or not os.path.isabs(value):
        return value
    if pool:
        inside = os.path.relpath(os.path.normpath(value), os.path.abspath(os.path.expanduser(pool)))
        if not inside.startswith(os.pardir):
            return Path(inside).as_posix()
    return Path(value).name
