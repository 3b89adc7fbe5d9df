"""Where adapters get their levels: a fixed pool of environment files, or a live run's buffer.

A served level is the run's own ``Level`` (an environment file with its hint,
skill and knobs) under an id and a file name, with its replay weight. Every adapter draws levels through one
``LevelSource``; ``open_levels`` reads what the user passed (a file, a folder
of files, or a run directory) and says in one sentence when it is neither.

A run directory is read live: each ``levels()`` call re-reads the run's store,
so a trainer that keeps drawing from a running ``spadegym run`` follows its
curriculum (new levels appear, retired ones leave) without a restart.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Protocol

from ..curriculum.buffer import retired
from ..envfile import SourceError, read_source
from ..envfile.folder import folder_files
from ..envfile.reference import unsupported_source
from ..level import FILE, Level
from ..store import DB_NAME, RunStore, StoreError
from ..text import quoted
from .level import LevelSourceError, ServedLevel

#: The longest level id a client may name.
LEVEL_ID_CHARS = 1024


class LevelSource(Protocol):
    """Anything that lists the levels to play now."""

    def levels(self) -> list[ServedLevel]: ...


def draw(levels: list[ServedLevel], rng: random.Random) -> ServedLevel:
    """One level, with chance proportional to its weight."""
    if not levels:
        raise LevelSourceError("the level source holds no levels; add environment files or let the run design some.")
    return rng.choices(levels, weights=[max(level.weight, 0.0) or 1e-9 for level in levels])[0]


def find_level(levels: list[ServedLevel], level_id: str) -> ServedLevel:
    """The level named ``level_id``; a client's id that names none is one sentence quoting only its start."""
    # A longer id names no level (a file's stem is at most 255 characters, a run's ids are short): refused unread.
    if not isinstance(level_id, str) or len(level_id) > LEVEL_ID_CHARS:
        raise LevelSourceError(f"level_id {quoted(str(level_id))} is not a level's id (a string of at most "
                               f"{LEVEL_ID_CHARS:,} characters); pass one of the levels' ids, or none to draw one.")
    for level in levels:
        if level.level_id == level_id:
            return level
    names = ", ".join(sorted(level.level_id for level in levels)[:10])
    raise LevelSourceError(f"no level named {quoted(level_id)}; levels here: {names}")


class PoolLevels:
    """A fixed pool: environment files, or folders of them (``game_*.py`` SPADE pools included)."""

    def __init__(self, paths: list[str | Path]):
        files: list[Path] = []
        for path in map(Path, paths):
            if path.is_dir():
                try:  # read as if hostile: a link out of the folder, a FIFO or a device is refused
                    found = [p for p in folder_files(path) if p.parent == path and not p.name.startswith("_")]
                except SourceError as exc:
                    raise LevelSourceError(str(exc)) from None
                if not found:
                    raise LevelSourceError(f"{path}: no environment files (*.py) in this folder.")
                files += found
            elif path.is_file():
                files.append(path)
            else:
                raise LevelSourceError(f"{path} does not exist; pass an environment file, a folder of them "
                                       "or a run directory.")
        self._levels: list[ServedLevel] = []
        seen: set[str] = set()
        for file in files:
            try:
                source = read_source(file)
            except SourceError as exc:
                raise LevelSourceError(str(exc)) from None
            if file.stem in seen:
                raise LevelSourceError(f"two environment files are named '{file.stem}.py'; rename one.")
            seen.add(file.stem)
            self._levels.append(ServedLevel.of(file.stem, source, file.name))

    def levels(self) -> list[ServedLevel]:
        return list(self._levels)


class RunLevels:
    """A live run's level buffer: the levels the curriculum replays now, weighted by their replay score.

    Retired levels (``buffer.retire_after`` plays) leave, by the buffer's own rule (``curriculum.retired``).
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        with RunStore.open(self.run_dir) as store:  # fails now, in one sentence, if it is no run
            self.retire_after = int(store.config.get("buffer", {}).get("retire_after", 0) or 0)

    def levels(self) -> list[ServedLevel]:
        try:
            with RunStore.open(self.run_dir) as store:
                buffer = (store.load_state("buffer") or {}).get("levels", {})
                # Remote levels (a run's openenv: sources) are played at their own servers, never served from here.
                rows = {row["env_id"]: row for row in store.environments(valid_only=True) if row["kind"] == FILE}
        except sqlite3.OperationalError as exc:  # the run is writing: one retry is enough under WAL
            raise LevelSourceError(f"{self.run_dir}: the run store is busy ({exc}); try again.") from None
        ids = [env_id for env_id, rec in buffer.items()
               if env_id in rows and not retired(rec.get("times_played", 0), self.retire_after)]
        if not ids and not buffer:  # no round finished yet: every valid environment so far
            ids = list(rows)
        scores = [float(buffer.get(i, {}).get("score", 0.0)) for i in ids]
        low = min(scores, default=0.0)
        return [ServedLevel(i, Level.from_dict(rows[i]), f"{i}.py", weight=1.0 + s - low) for i, s in zip(ids, scores)]


def open_levels(spec: str | Path | list[str | Path]) -> LevelSource:
    """A pool (files or folders), a run directory (it holds the run store) or ``reasoning-gym:TASK``: the spec
    is read by the run's own source registry (``designers.sources.SOURCES``), so the two never disagree."""
    if isinstance(spec, list):
        if len(spec) == 1:
            return open_levels(spec[0])
        return PoolLevels(spec)
    if (unsupported := unsupported_source(str(spec))) is not None:
        raise LevelSourceError(unsupported)
    from ..designers.sources import REASONING_GYM, SOURCES, UnknownSource

    try:
        parsed = SOURCES.parse(str(spec))
    except UnknownSource as exc:
        raise LevelSourceError(str(exc)) from None
    if parsed.kind == REASONING_GYM:
        from .reasoning_gym_levels import ReasoningGymLevels

        return ReasoningGymLevels(parsed.argument)
    path = Path(spec)
    if path.is_dir() and (path / DB_NAME).is_file():
        try:
            return RunLevels(path)
        except StoreError as exc:
            raise LevelSourceError(str(exc)) from None
    return PoolLevels([path])
