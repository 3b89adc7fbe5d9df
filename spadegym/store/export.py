"""Datasets from a run store: environments, episodes (as chat messages) and round summaries.

Formats:
- ``jsonl``: one JSON object per line, stdlib only; nested dicts stay objects.
- ``parquet``: pyarrow; free-form dicts (knobs, lineage, meta, nested summary
  values) become JSON text columns so every row shares one schema.
- ``hf``: a ``datasets`` ``save_to_disk`` directory with the parquet schema.
- ``spade``: environments only, in the SPADE reference's pool layout:
  ``games/game_{round:05d}_{index:03d}_{skill_slug}.py`` (the reference's
  loaders read ``game_*.py``), ``manifest.jsonl`` (file, id, round, index,
  skill, hint, family, knobs, sha256, scores) and ``checksums.sha256``
  (``sha256sum -c`` format). Each file is rewritten to load and win under the
  reference (``envfile.spade_export``: explicit imports, an unboxing shim, tool
  results as ``{"output": text}``) and checked by the gate as the reference
  plays it; a level that fails, or a remote level (its code runs on its OpenEnv
  server), is left out: its manifest line says ``"exported": false`` and why,
  and ``note`` says so on the terminal.

Exports only read the store, so they work on finished and interrupted runs alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..envfile import SourceError
from ..envfile.spade_export import for_reference
from ..errors import UserError, install_hint
from ..level import FILE
from ..outputs import (
    OutputError,
    check_output,
    holds_links,
    make_folder,
    open_output,
    write_bytes,
    write_text,
)
from ..validate import ValidationConfig, validate_sources
from ..validate.verdict import STATIC
from .card import DEFAULT_LICENSE, write_card
from .runstore import RunStore

FORMATS = ("jsonl", "parquet", "hf", "spade")
#: The formats whose output is a folder (the others write one file).
FOLDER_FORMATS = ("hf", "spade")
WHATS = ("envs", "episodes", "rounds")
SCORE_KEYS = (
    "round",
    "win_rate",
    "win_rate_hint",
    "regret",
    "oracle_regret",
    "designer_reward",
    "plays",
    "plays_hint",
)
_JSON_TEXT = {"envs": ("knobs", "lineage", "meta"), "episodes": (), "rounds": ()}
#: The gate's checks that decide whether the reference can load a file and its solution wins there.
LOADS_AND_WINS = frozenset({"loads", "reset_runs", "reset_observation", "step_runs", "robust_to_bad_actions",
                            "tools_listed", "tools_callable", "criteria_evaluable", "solution_returns_actions",
                            "solution_wins", "solution_fits_max_turns"})
_BATCH = 2000  # episodes per parquet row group / write batch


class ExportError(UserError):
    """An export that cannot be written as asked (unknown format, missing optional library)."""


# -- rows --------------------------------------------------------------------


def environment_rows(store: RunStore) -> list[dict[str, Any]]:
    """Valid environments with code, hint, metadata and their latest scores."""
    latest = store.latest_scores()
    rows = []
    for env in store.environments(valid_only=True):
        score = latest.get(env["env_id"])
        rows.append(
            {
                "env_id": env["env_id"],
                "kind": env["kind"],
                "code": env["source"],
                "remote": env["remote"],
                "hint": env["hint"],
                "skill": env["skill"],
                "family": env["family"],
                "knobs": env["knobs"],
                "lineage": env["lineage"],
                "meta": env["meta"],
                "code_hash": env["code_hash"],
                "round": env["round"],
                "scores": None if score is None else {k: score[k] for k in SCORE_KEYS},
            }
        )
    return rows


def episode_messages(episode: dict[str, Any]) -> list[dict[str, str]]:
    """The episode as a chat: each observation (hint line included) then the agent's reply."""
    messages = []
    for turn in episode.get("turns") or ():
        messages.append({"role": "user", "content": turn["observation"]})
        messages.append({"role": "assistant", "content": turn["reply"]})
    return messages


def episode_rows(store: RunStore) -> Iterator[dict[str, Any]]:
    """Every stored episode as a chat-format training record, round by round."""
    for summary in store.rounds():
        for ep in store.episodes(round=summary["round"]):
            yield {
                "env_id": ep["env_id"],
                "seed": ep.get("seed"),
                "round": ep["round"],
                "split": ep["split"],
                "hinted": bool(ep.get("hinted")),
                "return": float(ep.get("ret", 0.0)),
                "success": ep["success"],
                "failure": ep.get("failure"),
                "turns": len(ep.get("turns") or ()),
                "format_failures": int(ep.get("format_failures", 0)),
                "messages": episode_messages(ep),
                "final_observation": ep.get("final_observation", ""),
            }


def round_rows(store: RunStore) -> list[dict[str, Any]]:
    """Round summaries, "round" first."""
    return [{"round": s["round"], **{k: v for k, v in s.items() if k != "round"}} for s in store.rounds()]


# -- writers -----------------------------------------------------------------


def export_run(
    run_dir: str | Path,
    format: str = "jsonl",
    what: str | None = None,
    out: str | Path | None = None,
    note: Callable[[str], None] | None = None,
    license: str = DEFAULT_LICENSE,
) -> list[Path]:
    """Export a run; returns the paths written, and tells ``note`` in one sentence what a format leaves out.

    With ``what`` (envs, episodes or rounds) ``out`` is the file (the directory
    for hf/spade), default ``RUN_DIR/exports/<what>.<ext>``. Without it every
    applicable table is exported into the directory ``out`` (default
    ``RUN_DIR/exports``). ``license``: the Hub license id an hf export's dataset card names.
    """
    if format not in FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(FORMATS)}.")
    if what is not None and what not in WHATS:
        raise ExportError(f"unknown --what {what!r}; choose one of {', '.join(WHATS)}.")
    if format == "spade" and what not in (None, "envs"):
        raise ExportError("the spade format holds environments only; use --what envs or another format.")
    _require(format)
    with RunStore.open(run_dir) as store:
        # A default output lies in the run directory, which is data: nothing below it is followed as a link.
        if what is not None:
            target = Path(out) if out is not None else store.dir / "exports" / _name(what, format)
            root = store.dir if out is None else output_root(target, format)
            written = [_write(store, what, format, target, note, root)]
            card_folder, tables = target, [what]
        else:
            folder = Path(out) if out is not None else store.dir / "exports"
            root = store.dir if out is None else folder
            whats = ("envs",) if format == "spade" else WHATS
            written = [_write(store, w, format, folder / _name(w, format), note, root) for w in whats]
            card_folder, tables = folder, list(whats)
    if format == "hf":  # a Hub dataset card beside the tables
        write_card(card_folder, run_dir, tables, root=root, license=license)
    return written


def output_root(target: Path, format: str) -> Path:
    """The folder an output the user named is written inside: the folder itself, or a file's folder."""
    return target if format in FOLDER_FORMATS else target.parent


def _name(what: str, format: str) -> str:
    return {"jsonl": f"{what}.jsonl", "parquet": f"{what}.parquet", "hf": what, "spade": "pool"}[format]


def _write(store: RunStore, what: str, format: str, target: Path, note: Callable[[str], None] | None,
           root: Path) -> Path:
    rows: Iterable[dict[str, Any]] = {
        "envs": lambda: environment_rows(store),
        "episodes": lambda: episode_rows(store),
        "rounds": lambda: round_rows(store),
    }[what]()
    validation = gate_settings(store.config) if format == "spade" else None
    return write_rows(what, rows, format, target, note, validation, root)


def gate_settings(stored: dict[str, Any]) -> ValidationConfig:
    """The gate's settings for re-checking a run's levels: the store's, except the safety settings (the sandbox,
    what may be imported), which are the user's (``spadegym.safety``): a store never loosens the sandbox."""
    from pydantic import ValidationError

    from ..safety import with_users_safety

    stored_validation = stored.get("validation") if isinstance(stored, dict) else None
    merged = with_users_safety({"validation": stored_validation if isinstance(stored_validation, dict) else {}},
                               {"validation": ValidationConfig().model_dump(mode="json")})
    try:
        return ValidationConfig.model_validate(merged["validation"])
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"])
        raise ExportError(f"the run's stored gate setting 'validation.{where}' is not valid "
                          f"({exc.errors()[0]['msg']}); export another format, or fix the run's config.") from None


def write_rows(what: str, rows: Iterable[dict[str, Any]], format: str, target: Path,
               note: Callable[[str], None] | None = None, validation: ValidationConfig | None = None,
               root: Path | None = None) -> Path:
    """Write rows shaped like ``environment_rows`` / ``episode_rows`` / ``round_rows`` in one format.

    ``validation``: the gate's settings for the spade format's check of each rewritten file. ``root``: the
    folder the output is written inside, following no link below it (default: ``output_root``).
    """
    if format not in FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(FORMATS)}.")
    _require(format)
    root = root or output_root(target, format)
    make_folder(target if format in FOLDER_FORMATS else target.parent, root)
    if format == "jsonl":
        with open_output(target, root) as f:
            for row in rows:
                f.write(json.dumps(_finite(row), ensure_ascii=False) + "\n")
    elif format == "spade":
        _write_spade(list(rows), target, note or (lambda _message: None), validation or ValidationConfig(), root)
    else:
        _write_arrow(what, rows, format, target, root)
    return target


def spade_file_name(round_: int, index: int, skill: str | None) -> str:
    """The reference's name for a generated game: ``game_{round:05d}_{index:03d}_{skill_slug}.py``."""
    slug = re.sub(r"[^a-z0-9_]", "", str(skill or "unknown").lower().replace(" ", "_"))[:64] or "unknown"
    return f"game_{round_:05d}_{index:03d}_{slug}.py"


def _for_reference(row: dict[str, Any]) -> tuple[str | None, str]:
    """The level's file rewritten for the reference (``envfile.spade_export``), or None and why not."""
    if row.get("kind", FILE) != FILE:
        return None, (f"a remote level: its code runs on its OpenEnv server ({row['remote']['url']}), so a pool "
                      "cannot hold it; --format jsonl, parquet or hf exports its settings")
    try:
        return for_reference(row["code"], f"{row['env_id']}.py"), ""
    except SourceError as exc:
        return None, str(exc)


def _write_spade(rows: list[dict[str, Any]], folder: Path, note: Callable[[str], None],
                 validation: ValidationConfig, root: Path) -> None:
    """Each level rewritten for the reference and checked by the gate as the reference plays it; the
    files that pass go in ``games/``, and the manifest lists every level, a left-out one with its reason."""
    make_folder(folder / "games", root)
    rows = sorted(rows, key=lambda r: (int(r["round"] or 0), r["env_id"]))
    rewritten = [_for_reference(row) for row in rows]
    checkable = [(i, code) for i, (code, _why) in enumerate(rewritten) if code is not None]
    # The gate, as the reference plays the rewritten file; only what decides loading and winning counts
    # (the level passed the rest when it was proposed), so the probes that judge nothing else are few.
    quick = validation.model_copy(update={"random_episodes": 1, "check_leaks": False})
    verdicts = dict(zip((i for i, _ in checkable), validate_sources(
        [(code, f"{rows[i]['env_id']}.py", rows[i]["hint"]) for i, code in checkable], config=quick)))
    counts: dict[int, int] = {}
    checksums = []
    with open_output(folder / "manifest.jsonl", root) as manifest:
        for i, (row, (code, why)) in enumerate(zip(rows, rewritten)):
            round_ = int(row["round"] or 0)
            scores = row["scores"] or {}
            entry: dict[str, Any] = {
                "id": row["env_id"], "round": round_, "skill": row["skill"], "hint": row["hint"],
                "family": row["family"], "knobs": row["knobs"], "code_hash": row["code_hash"],
                **{k: scores.get(k) for k in SCORE_KEYS if k != "round"}, "scored_round": scores.get("round"),
            }
            verdict = verdicts.get(i)
            refused = [c for c in verdict.failed if c.name in LOADS_AND_WINS or c.category == STATIC] if verdict else []
            if code is not None and refused:
                code, why = None, f"played as the reference plays it, {refused[0].name} fails: {refused[0].message}"
            if code is None:
                note(f"left out of the pool: {row['env_id']}: {why}")
                manifest.write(json.dumps(_finite({**entry, "exported": False, "reason": why}), ensure_ascii=False)
                               + "\n")
                continue
            index = counts[round_] = counts.get(round_, -1) + 1
            name = f"games/{spade_file_name(round_, index, row['skill'])}"
            data = code.encode("utf-8")
            write_bytes(folder / name, data, root)
            digest = hashlib.sha256(data).hexdigest()
            checksums.append(f"{digest}  {name}\n")
            warnings = [c.message for c in verdict.warnings] if verdict is not None else []
            manifest.write(json.dumps(_finite({"file": name, **entry, "index": index, "sha256": digest,
                                               "exported": True, "warnings": warnings}), ensure_ascii=False) + "\n")
    write_text(folder / "checksums.sha256", "".join(checksums), root)


def _require(format: str) -> None:
    needs = {"parquet": ("pyarrow",), "hf": ("pyarrow", "datasets")}.get(format, ())
    for module in needs:
        try:
            __import__(module)
        except ImportError:
            raise ExportError(
                f"the {format} export needs the {module} package; install it with {install_hint('export')}."
            ) from None


def _schema(what: str):
    import pyarrow as pa

    if what == "envs":
        scores = pa.struct(
            [
                (k, pa.int64()) if k in ("round", "plays", "plays_hint") else (k, pa.float64())
                for k in SCORE_KEYS
            ]
        )
        text = ("env_id", "code", "hint", "skill", "family", "knobs", "lineage", "meta", "code_hash")
        return pa.schema([*((k, pa.string()) for k in text), ("round", pa.int64()), ("scores", scores)])
    if what == "episodes":
        message = pa.struct([("role", pa.string()), ("content", pa.string())])
        return pa.schema(
            [
                ("env_id", pa.string()),
                ("seed", pa.int64()),
                ("round", pa.int64()),
                ("split", pa.string()),
                ("hinted", pa.bool_()),
                ("return", pa.float64()),
                ("success", pa.bool_()),
                ("failure", pa.string()),
                ("turns", pa.int64()),
                ("format_failures", pa.int64()),
                ("messages", pa.list_(message)),
                ("final_observation", pa.string()),
            ]
        )
    return None  # rounds: inferred from whatever the summaries hold


def _tabular(what: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make rows fit one arrow schema: free-form dicts and mixed-type columns become JSON text."""
    rows = [_finite(r) for r in rows]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for key in keys:
        values = [r.get(key) for r in rows if r.get(key) is not None]
        scalar_kinds = {"num" if isinstance(v, (int, float)) else type(v).__name__ for v in values}
        if key in _JSON_TEXT[what] or (
            what == "rounds" and not scalar_kinds <= {"num"} and scalar_kinds != {"str"}
        ):
            for r in rows:
                if r.get(key) is not None:
                    r[key] = json.dumps(r[key], ensure_ascii=False)
    return rows


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_arrow(what: str, rows: Iterable[dict[str, Any]], format: str, target: Path, root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema(what)
    if schema is None:  # rounds are few: one table, types inferred across all of them
        table = pa.Table.from_pylist(_tabular(what, list(rows)))
    else:
        tables = [pa.Table.from_pylist(_tabular(what, b), schema=schema) for b in _batches(rows)]
        table = pa.concat_tables(tables) if tables else schema.empty_table()
    if format == "parquet":
        with open_output(target, root, "wb", None) as handle:
            pq.write_table(table, handle, row_group_size=_BATCH)
        return
    import datasets

    # datasets writes into the folder by path: a link already in it is refused rather than followed.
    link = holds_links(check_output(target, root))
    if link is not None:
        raise OutputError(f"{link} is a link; spadegym writes no output through a link (it could lead anywhere), "
                          "so remove it or choose another output.")

    features = datasets.Features.from_arrow_schema(table.schema)
    datasets.Dataset.from_dict(table.to_pydict(), features=features).save_to_disk(str(target))


def _finite(value: Any) -> Any:
    """NaN/inf become null: strict JSON readers (and arrow's) reject them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
