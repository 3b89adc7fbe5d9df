"""The run store: one SQLite file per run directory, the single source of truth.

The loop writes each round through ``with store.round(n) as tx:``: every
proposal, environment, episode, score and state blob of the round goes into
ONE transaction that commits only after ``tx.finish(summary)``. A process
killed mid-round therefore loses exactly that round; readers (the report, the
exports, ``--resume``) only ever see complete rounds.

    store = RunStore.create(run_dir, config={...}, versions={...})
    with store.round(1) as tx:
        tx.add_proposal(candidate, verdict, env_id, valid=True)
        tx.add_environment(env_id, source, hint, skill, family, knobs, lineage, code_hash, meta)
        tx.add_episodes([episode.to_dict() | {"round": 1, "split": "train"}, ...])
        tx.add_scores([{"env_id": env_id, "win_rate": 0.5, ...}])
        tx.save_state("buffer", buffer.state_dict())
        tx.finish({"win_rate": 0.41, ...})
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..envfile.contract import is_success
from ..errors import UserError
from ..figures import finite_or_none
from ..jsondata import MAX_BYTES, UntrustedJSONError, loads
from ..level import FILE, Level
from ..outputs import OutputError, check_output, make_folder
from ..specs import written_kind
from ..text import storable
from .schema import DDL, MIGRATIONS, SCHEMA_VERSION, TABLES

if TYPE_CHECKING:
    from .record import RoundRecord

DB_NAME = "run.sqlite"
SPLITS = ("train", "heldout")
_SCORE_REALS = ("win_rate", "win_rate_hint", "regret", "oracle_regret", "designer_reward")
_SCORE_COUNTS = ("plays", "plays_hint")


class StoreError(UserError):
    """A run directory that cannot be used as asked (missing, corrupt, already a run)."""


def _stored(text: str | bytes, what: str) -> Any:
    """A JSON value read back from the store: a run directory is data anyone may have altered, so a value that is
    not JSON, or larger or deeper than spadegym writes, is one StoreError, not a RecursionError or a memory spike."""
    try:
        return loads(text, what)
    except UntrustedJSONError as exc:
        raise StoreError(f"{exc}; the run directory was altered, so start a new run.") from None


def _inflated(data: bytes, what: str) -> bytes:
    """A stored compressed record, inflated no further than the largest record spadegym writes (a small blob can
    declare gigabytes)."""
    try:
        return zlib.decompressobj().decompress(data, MAX_BYTES + 1)  # one byte more: ``_stored`` names the excess
    except (zlib.error, TypeError):
        raise StoreError(f"{what} is not a compressed record; the run directory was altered, so start a new run.") from None


def _plain(value: Any) -> Any:
    """json.dumps fallback: numpy scalars/arrays, dataclasses, sets, paths."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)  # a set's own order depends on the process's hash seed
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store a value of type {type(value).__name__} as JSON")


def to_json(value: Any) -> str:
    """Compact JSON that SQLite can store: a lone surrogate from a model or an environment is replaced."""
    return storable(json.dumps(value, default=_plain, separators=(",", ":"), ensure_ascii=False))


_number = finite_or_none  # a stored figure is a finite number or NULL


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


class RoundTransaction:
    """Everything one round writes; valid only inside ``with store.round(n)``."""

    def __init__(self, store: RunStore, round: int) -> None:
        self._store = store
        self._db = store._db
        self.round = round
        self.finished = False

    # -- designer side ---------------------------------------------------

    def add_proposal(
        self,
        candidate: dict[str, Any],
        verdict: dict[str, Any] | None,
        env_id: str | None,
        valid: bool,
        round: int | None = None,
    ) -> int:
        """Record one proposal (valid or not) with its verdict; returns its row id."""
        self._check_open()
        cur = self._db.execute(
            "INSERT INTO proposals (round, candidate_id, candidate, verdict, env_id, valid)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                self.round if round is None else round,
                candidate.get("candidate_id") or None,
                to_json(candidate),
                None if verdict is None else to_json(verdict),
                env_id,
                int(bool(valid)),
            ),
        )
        return int(cur.lastrowid)

    def set_proposal_reward(self, candidate_id: str, reward: float) -> None:
        """Attach the designer reward to a proposal (possibly one from an earlier round)."""
        self._check_open()
        cur = self._db.execute(
            "UPDATE proposals SET reward = ? WHERE id = "
            "(SELECT max(id) FROM proposals WHERE candidate_id = ?)",
            (_number(reward), candidate_id),
        )
        if cur.rowcount == 0:
            raise KeyError(f"no proposal with candidate_id {candidate_id!r} in the store")

    def add_environment(self, env_id: str, level: Level, meta: dict[str, Any] | None = None, *,
                        valid: bool = True) -> None:
        """Add a level to the pool under ``env_id`` (new to the run): its kind, file or server, hint, skill,
        params, lineage and code hash, and ``meta`` (provenance)."""
        self._check_open()
        stored = level.to_dict()
        try:
            self._db.execute(
                "INSERT INTO environments (env_id, round, kind, source, remote, hint, skill, family, knobs, lineage,"
                " code_hash, meta, valid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    env_id,
                    self.round,
                    level.kind,
                    None if stored["source"] is None else storable(stored["source"]),
                    None if stored.get("remote") is None else to_json(stored["remote"]),
                    None if stored["hint"] is None else storable(stored["hint"]),
                    storable(stored["skill"]) if stored["skill"] else None,
                    stored["family"],
                    to_json(stored["knobs"] or {}),
                    to_json(stored["lineage"]),
                    level.code_hash,
                    to_json(meta or {}),
                    int(bool(valid)),
                ),
            )
        except sqlite3.IntegrityError:
            raise ValueError(f"environment {env_id!r} is already in the store") from None

    # -- agent side ------------------------------------------------------

    def add_episodes(self, episodes: list[dict[str, Any]]) -> None:
        """Add Episode.to_dict() records, each with "round" (optional) and "split"."""
        self._check_open()
        rows = []
        for ep in episodes:
            split = ep.get("split", "train")
            if split not in SPLITS:
                raise ValueError(f"episode split must be one of {SPLITS}, not {split!r}")
            success = ep.get("success")
            if success is None:  # the contract's one success rule
                success = is_success(float(ep.get("ret", 0.0)), ep.get("failure"))
            rows.append(
                (
                    int(ep.get("round", self.round)),
                    split,
                    ep["env_id"],
                    _count(ep.get("seed")),
                    int(bool(ep.get("hinted", False))),
                    float(ep.get("ret", 0.0)),
                    int(bool(success)),
                    ep.get("failure"),
                    len(ep.get("turns") or ()),
                    zlib.compress(to_json(ep).encode(), 6),
                )
            )
        self._db.executemany(
            "INSERT INTO episodes (round, split, env_id, seed, hinted, ret, success, failure, turns, data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def add_scores(self, rows: list[dict[str, Any]]) -> None:
        """Per-environment scores of this round; unknown keys go to ``extra``."""
        self._check_open()
        known = {"env_id", "round", "extra", *_SCORE_REALS, *_SCORE_COUNTS}
        values = []
        for row in rows:
            extra = dict(row.get("extra") or {})
            extra.update({k: v for k, v in row.items() if k not in known})
            values.append(
                (
                    int(row.get("round", self.round)),
                    row["env_id"],
                    *(_number(row.get(c)) for c in _SCORE_REALS),
                    *(_count(row.get(c)) for c in _SCORE_COUNTS),
                    to_json(extra),
                )
            )
        self._db.executemany(
            "INSERT INTO scores (round, env_id, win_rate, win_rate_hint, regret, oracle_regret,"
            " designer_reward, plays, plays_hint, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )

    # -- round bookkeeping -----------------------------------------------

    def save_state(self, key: str, value: dict[str, Any]) -> None:
        """Keep the latest value of a state blob (buffer, designer, rng, ...) for resume."""
        self._check_open()
        self._db.execute(
            "INSERT INTO state (key, round, value) VALUES (?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET round = excluded.round, value = excluded.value",
            (key, self.round, to_json(value)),
        )

    def finish(self, summary: dict[str, Any]) -> None:
        """Write the round summary and mark the round complete (commits on leaving ``with``)."""
        self._check_open()
        self._db.execute(
            "INSERT INTO rounds (round, summary, finished_at) VALUES (?, ?, ?)",
            (self.round, to_json(summary), time.time()),
        )
        self.finished = True

    def _check_open(self) -> None:
        if self.finished:
            raise RuntimeError(f"round {self.round} is already finished; start the next round to write more")


def versions() -> dict[str, str]:
    """The software a store is created with (a run's and a red-team search's): spadegym, Python, NumPy."""
    import numpy

    from .. import __version__

    return {"spadegym": __version__, "python": platform.python_version(), "numpy": numpy.__version__}


def _refuse_linked_store(run_dir: Path) -> None:
    """The store and the files SQLite keeps beside it are written in place: a link among them (planted in a run
    directory handed over) would carry the writes out of the folder, so it is refused."""
    try:
        for name in (DB_NAME, *(DB_NAME + suffix for suffix in ("-journal", "-wal", "-shm"))):
            check_output(run_dir / name, run_dir)
    except OutputError as exc:
        raise StoreError(str(exc)) from None


class RunStore:
    """A run directory's store. Create a new run or open an existing one; see the module doc."""

    def __init__(self, run_dir: Path, db: sqlite3.Connection) -> None:
        self.dir = run_dir
        self._db = db
        self._lock = threading.RLock()
        self.config: dict[str, Any] = self._meta("config") or {}
        self.versions: dict[str, Any] = self._meta("versions") or {}
        if not isinstance(self.config, dict) or not isinstance(self.versions, dict):
            raise StoreError(f"{self.path} holds a config that is not a table of settings; the run directory was "
                             "altered, so start a new run.")

    # -- opening ---------------------------------------------------------

    @classmethod
    def create(cls, run_dir: str | Path, config: dict[str, Any], versions: dict[str, Any]) -> RunStore:
        """Start a new run in ``run_dir`` (created if needed); refuses a directory that holds a run."""
        run_dir = Path(run_dir)
        path = run_dir / DB_NAME
        if path.exists():
            raise StoreError(
                f"{run_dir} already holds a run ({DB_NAME}); resume it or choose a new output directory."
            )
        if run_dir.exists() and not run_dir.is_dir():
            raise StoreError(f"{run_dir} is a file, not a directory; choose a directory for the run.")
        run_dir.mkdir(parents=True, exist_ok=True)
        _refuse_linked_store(run_dir)
        db = _connect(path)
        db.executescript("BEGIN;" + DDL)  # tables and metadata in one transaction
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        db.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("config", to_json(config)),
                ("versions", to_json(versions)),
                ("created_at", to_json(time.time())),
            ],
        )
        db.execute("COMMIT")
        return cls(run_dir, db)

    @classmethod
    def open(cls, run_dir: str | Path) -> RunStore:
        """Open an existing run; a missing or damaged store is one clear StoreError."""
        run_dir = Path(run_dir)
        path = run_dir / DB_NAME
        if not run_dir.is_dir():
            raise StoreError(f"run directory {run_dir} does not exist; pass the --out directory of a run.")
        if not path.is_file():
            raise StoreError(
                f"{run_dir} holds no run ({DB_NAME} is missing); pass the --out directory of a run."
            )
        _refuse_linked_store(run_dir)
        try:
            db = _connect(path)
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a readable run store ({exc}); the file is damaged.") from None
        missing = [t for t in TABLES if t not in tables]
        if missing:
            db.close()
            raise StoreError(f"{path} is not a spadegym run store (tables missing: {', '.join(missing)}).")
        row = db.execute("SELECT max(version) FROM schema_version").fetchone()
        if row is None or row[0] is None or row[0] > SCHEMA_VERSION:
            db.close()
            raise StoreError(
                f"{path} has store schema version {row and row[0]}, this spadegym reads up to "
                f"{SCHEMA_VERSION}; upgrade spadegym."
            )
        try:
            if row[0] < SCHEMA_VERSION:
                _migrate(db, path, row[0])
            return cls(run_dir, db)
        except StoreError:
            db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return self.dir / DB_NAME

    @property
    def checkpoint_dir(self) -> Path:
        """Where learners keep checkpoints (created on first use)."""
        return make_folder(self.dir / "checkpoints", self.dir)  # never a link: old checkpoints are deleted in it

    def learner_checkpoint(self) -> Path | None:
        """The learner checkpoint of the last complete round, if the run has one."""
        state = self.load_state("learner")
        if not state:
            return None
        path = self.checkpoint_dir / state["checkpoint"]
        return path if path.exists() else None

    # -- writing ---------------------------------------------------------

    @contextmanager
    def round(self, n: int) -> Iterator[RoundTransaction]:
        """One transaction for round ``n``: committed only if the block ends after ``tx.finish()``."""
        with self._lock:
            last = self.last_complete_round()
            if last is not None and n <= last:
                raise ValueError(f"round {n} is already complete in this store (last complete: {last})")
            self._db.execute("BEGIN IMMEDIATE")
            tx = RoundTransaction(self, n)
            try:
                yield tx
                if not tx.finished:
                    raise RuntimeError(f"round {n} ended without tx.finish(summary); nothing was written")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def write_round(self, record: RoundRecord) -> None:
        """Everything of one round in one transaction: proposals and new levels, designer rewards,
        episodes (train and held-out), per-level scores, resume state, and the summary last."""
        from ..families import difficulty_index

        if record.summary is None:
            raise ValueError(f"round {record.round} has no summary yet; summarize it before writing")
        clusters = record.clusters  # a red-team round: each level is kept with the failure it joined
        with self.round(record.round) as tx:
            for p in record.proposals:
                c = p.candidate
                tx.add_proposal(c.to_dict(), None if p.verdict is None else p.verdict.to_dict(), p.env_id, p.valid)
                if p.valid:
                    meta = {"cluster": clusters.get(p.name)} if clusters is not None else {
                        "difficulty": difficulty_index(c.family, c.knobs), "class_name": c.level.info.class_name,
                        **c.stored_meta()}
                    tx.add_environment(p.name, c.level, meta)
            for earned in record.feedback:
                if earned.candidate_id:
                    tx.set_proposal_reward(earned.candidate_id, earned.reward)
            tx.add_episodes([{**e.to_dict(), "round": record.round, "split": "train"} for e in record.episodes])
            tx.add_episodes([{**e.to_dict(), "round": record.round, "split": "heldout"}
                             for e in record.heldout_episodes])
            tx.add_scores([{
                "env_id": env_id, "win_rate": s.win_rate, "win_rate_hint": s.win_rate_hint, "regret": s.regret,
                **({"cluster": clusters.get(env_id)} if clusters is not None else {
                    "oracle_regret": s.oracle_regret, "difficulty": record.difficulty.get(env_id)}),
                "designer_reward": record.rewards[env_id], "plays": s.plays, "plays_hint": s.plays_hint,
            } for env_id, s in record.stats.items()])
            for key, state in record.states.items():
                tx.save_state(key, state)
            tx.finish(record.summary.to_dict())

    # -- reading ---------------------------------------------------------

    def last_complete_round(self) -> int | None:
        return self._db.execute("SELECT max(round) FROM rounds").fetchone()[0]

    def load_state(self, key: str) -> dict[str, Any] | None:
        """The latest saved value of a state blob (as of the last complete round)."""
        row = self._db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return None if row is None else _stored(row[0], f"the saved {key} state in {self.path}")

    def rounds(self) -> list[dict[str, Any]]:
        """Round summaries in order, each with its "round" number added."""
        return [
            {**_stored(summary, f"the summary of round {n} in {self.path}"), "round": n}
            for n, summary in self._db.execute("SELECT round, summary FROM rounds ORDER BY round")
        ]

    def environments(self, valid_only: bool = True) -> list[dict[str, Any]]:
        sql = (
            "SELECT * FROM environments"
            + (" WHERE valid = 1" if valid_only else "")
            + " ORDER BY round, rowid"
        )
        return [_environment(row) for row in self._rows(sql)]

    def environment(self, env_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM environments WHERE env_id = ?", (env_id,))
        return _environment(rows[0]) if rows else None

    def levels(self, env_ids: Iterable[str] | None = None) -> dict[str, Level]:
        """The stored levels (of ``env_ids``, else every valid one), as the values that were written."""
        if env_ids is None:
            rows = self._rows("SELECT * FROM environments WHERE valid = 1 ORDER BY round, rowid")
        else:
            wanted = list(env_ids)
            rows = [row for i in range(0, len(wanted), 500) for row in self._rows(
                f"SELECT * FROM environments WHERE env_id IN ({','.join('?' * len(wanted[i:i + 500]))})",
                tuple(wanted[i:i + 500]))]
        return {row["env_id"]: level_of(_environment(row)) for row in rows}

    def proposals(self, round: int | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM proposals", ()
        if round is not None:
            sql, args = sql + " WHERE round = ?", (round,)
        out = []
        for row in self._rows(sql + " ORDER BY id", args):
            what = f"proposal {row['id']} in {self.path}"
            row["candidate"] = _stored(row["candidate"], what)
            row["verdict"] = None if row["verdict"] is None else _stored(row["verdict"], f"the verdict of {what}")
            row["valid"] = bool(row["valid"])
            out.append(row)
        return out

    def episodes(
        self,
        env_id: str | None = None,
        round: int | None = None,
        split: str | None = None,
        limit: int | None = None,
        hinted: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Episode dicts (as written, plus "round", "split", "success"), in insertion order."""
        where, args = _filters(env_id=env_id, round=round, split=split, hinted=hinted)
        sql = "SELECT round, split, success, data FROM episodes" + where + " ORDER BY id"
        if limit is not None:
            sql, args = sql + " LIMIT ?", (*args, int(limit))
        out = []
        for n, sp, success, data in self._db.execute(sql, args):
            what = f"an episode of round {n} in {self.path}"
            ep = _stored(_inflated(data, what), what)
            ep.update(round=n, split=sp, success=bool(success))
            out.append(ep)
        return out

    def episode_count(
        self, env_id: str | None = None, round: int | None = None, split: str | None = None
    ) -> int:
        where, args = _filters(env_id=env_id, round=round, split=split)
        return self._db.execute("SELECT count(*) FROM episodes" + where, args).fetchone()[0]

    def scores(self, env_id: str | None = None, round: int | None = None) -> list[dict[str, Any]]:
        """Score rows ordered by round then insertion."""
        where, args = _filters(env_id=env_id, round=round)
        out = []
        for row in self._rows("SELECT * FROM scores" + where + " ORDER BY round, id", args):
            row.pop("id")
            row["extra"] = _stored(row["extra"], f"a score of {row['env_id']} in {self.path}")
            out.append(row)
        return out

    def latest_scores(self) -> dict[str, dict[str, Any]]:
        """The most recent score row of every scored environment, by env_id."""
        return {row["env_id"]: row for row in self.scores()}

    def created_at(self) -> float | None:
        return self._meta("created_at")

    # -- internals -------------------------------------------------------

    def _meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else _stored(row[0], f"the {key} in {self.path}")

    def _rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        cur = self._db.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur]


def _migrate(db: sqlite3.Connection, path: Path, version: int) -> None:
    """Bring a store of an older schema up to this one (a read-only store is read as it is)."""
    config = _stored((db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone() or ["{}"])[0],
                     f"the config in {path}")
    if not isinstance(config, dict):
        config = {}
    if version < 2 and any(written_kind(s.get("source", "")) == "openenv"
                           for s in config.get("sources") or [] if isinstance(s, dict)):
        db.close()
        raise StoreError(f"{path} was written by an older spadegym that stored remote levels as descriptor files, "
                         "which this one never reads as levels; start a new run with the same configuration.")
    try:
        db.execute("BEGIN IMMEDIATE")
        for step in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[step]:
                db.execute(statement)
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        db.execute("COMMIT")
    except sqlite3.OperationalError:  # read-only: readers take a missing column's default
        if db.in_transaction:
            db.execute("ROLLBACK")


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a round is exactly one transaction.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable against process kills
    db.execute("PRAGMA foreign_keys = ON")
    return db


def _filters(**conditions: Any) -> tuple[str, tuple]:
    parts, args = [], []
    for column, value in conditions.items():
        if value is not None:
            parts.append(f"{column} = ?")
            args.append(int(value) if isinstance(value, bool) else value)
    return (" WHERE " + " AND ".join(parts) if parts else ""), tuple(args)


def _environment(row: dict[str, Any]) -> dict[str, Any]:
    for key in ("knobs", "lineage", "meta"):
        row[key] = _stored(row[key], f"the {key} of level {row.get('env_id')!r} in the store")
    row["valid"] = bool(row["valid"])
    row["kind"] = row.get("kind") or FILE  # a store of schema 1 holds files only
    row["remote"] = (_stored(row["remote"], f"the settings of level {row.get('env_id')!r} in the store")
                     if row.get("remote") else None)
    return row


def level_of(row: dict[str, Any]) -> Level:
    """The level an environments row (as ``RunStore.environment`` returns it) holds."""
    try:
        return Level.from_dict(row)
    except ValidationError as exc:  # a store altered by hand: one sentence
        first = exc.errors()[0]
        why = f"{'.'.join(map(str, first['loc'])) or 'its settings'}: {first['msg']}"[:200]
        raise StoreError(f"level {row.get('env_id')!r} in the store is a remote level whose settings are malformed "
                         f"({why}); the run directory was altered, so start a new run.") from None
