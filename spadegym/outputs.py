"""Files spadegym writes into a folder that may hold someone else's data (a run directory, a suite, an --out).

A folder handed over can hold planted links: ``exports`` a link to a folder elsewhere, ``envs.jsonl`` a link to
a file elsewhere. An output never follows one: every folder below the output's ``root`` (the folder the user
named, or the run directory a default output lies in) is opened without following links, and the file itself is
opened with ``O_NOFOLLOW`` and refused when another name shares it (a hard link), before it is truncated. What
lies above ``root`` is the user's own path, followed as given.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import UserError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class OutputError(UserError):
    """An output path that would write through a link, or over something that is not a plain file."""


def _below(path: Path, root: Path) -> tuple[str, ...]:
    try:
        return Path(os.path.normpath(path)).relative_to(os.path.normpath(root)).parts
    except ValueError:
        raise OutputError(f"{path} is not inside {root}; name an output inside it.") from None


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise OutputError(f"{path} is a link; spadegym writes no output through a link (it could lead anywhere), "
                          "so remove it or choose another output.")


def check_output(path: str | Path, root: str | Path) -> Path:
    """``path`` when nothing at or below ``root`` on the way to it is a link (what exists of it); else OutputError."""
    path, root = Path(path), Path(root)
    step = root
    for part in _below(path, root):
        step = step / part
        _refuse_link(step)
    return path


def make_folder(path: str | Path, root: str | Path) -> Path:
    """Create ``path`` and the folders between ``root`` and it, none of them a link (``root`` is created too)."""
    path, root = Path(path), Path(root)
    root.mkdir(parents=True, exist_ok=True)
    step = root
    for part in _below(path, root):
        step = step / part
        check_output(step, root)
        try:
            step.mkdir(exist_ok=True)
        except FileExistsError:
            raise OutputError(f"{step} is a file where spadegym writes a folder; remove it or choose another "
                              "output.") from None
        check_output(step, root)  # a link swapped in since is refused, not followed
    return path


@contextmanager
def open_output(path: str | Path, root: str | Path, mode: str = "w", encoding: str | None = "utf-8"
                ) -> Iterator[IO[Any]]:
    """``open(path, mode)`` for writing, into folders ``make_folder`` makes, never through a link (the file is
    opened with O_NOFOLLOW and refused when another name shares it, before anything in it is replaced)."""
    path = Path(path)
    make_folder(path.parent, root)
    check_output(path, root)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | (os.O_APPEND if "a" in mode else 0), 0o666)
    except OSError as exc:
        raise OutputError(f"cannot write {path} ({exc.strerror}); choose another output.") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        raise OutputError(f"{path} is {'a hard link' if stat.S_ISREG(info.st_mode) else 'not a plain file'}; "
                          "spadegym writes no output through one, so remove it or choose another output.")
    if "a" not in mode:
        os.ftruncate(fd, 0)
    binary = "b" in mode
    with os.fdopen(fd, ("ab" if "a" in mode else "wb") if binary else ("a" if "a" in mode else "w"),
                   encoding=None if binary else encoding) as handle:
        yield handle


def write_text(path: str | Path, text: str, root: str | Path) -> Path:
    """Write ``text`` (UTF-8) to ``path`` as ``open_output`` does; returns ``path``."""
    with open_output(path, root) as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes, root: str | Path) -> Path:
    with open_output(path, root, "wb", None) as handle:
        handle.write(data)
    return Path(path)


def holds_links(folder: str | Path) -> Path | None:
    """The first link inside ``folder`` (walked without following links), if any: a folder a library writes into by
    path (``datasets.save_to_disk``) is checked with this first."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return None
    for top, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            if (Path(top) / name).is_symlink():
                return Path(top) / name
    return None
