"""Files a folder names (pools, suites, manifests, checksums): inside the folder, regular, bounded.

A folder may come from anyone. A name it holds is resolved against it, and one that leaves it
(an absolute path, ``..``, a link to somewhere outside) is refused; so is anything that is not a
regular file (a FIFO, a device, a file of ``/proc``) and a file over its size limit, before a
byte of it is read. Each refusal is a ``SourceError`` of one sentence.

    source = read_text(inside(suite, case.file), ENV_FILE_BYTES, "an environment file")
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .static import SourceError

#: The largest environment file read (an honest one is a few kilobytes; the sandbox loads at most 4 MiB).
ENV_FILE_BYTES = 1 << 20


def inside(folder: str | Path, name: str | Path) -> Path:
    """``folder / name``, refused unless it stays inside ``folder`` once every link on the way is followed."""
    folder = Path(folder)
    if Path(name).is_absolute():
        raise SourceError(f"{folder} names {str(name)[:200]!r}, an absolute path; a folder's files must be inside it.")
    target = folder / name
    try:
        inside_it = target.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop
        inside_it = False
    if not inside_it:
        raise SourceError(f"{target} leads outside {folder} (through '..' or a link); a folder's files must be "
                          "inside it.")
    return target


def folder_files(folder: str | Path, pattern: str = "*.py") -> list[Path]:
    """The files matching ``pattern`` anywhere below ``folder`` (not in hidden or cache folders), sorted;
    an entry that leads outside it or is no regular file is refused."""
    folder = Path(folder)
    found = []
    for path in sorted(folder.rglob(pattern)):
        relative = path.relative_to(folder)
        if any(part.startswith((".", "__pycache__")) for part in relative.parts[:-1]):
            continue
        if path.is_dir() and not path.is_symlink():
            continue
        inside(folder, relative)
        if not path.is_file():
            raise SourceError(f"{path} is not a regular file (a FIFO, a device or a socket); remove it from {folder}.")
        found.append(path)
    return found


def read_bytes(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The whole of a regular file of at most ``limit`` bytes; anything else is refused before it is read."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # a FIFO must not block the open
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file; check the path.") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror}).") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"{path} is not a regular file (a FIFO, a device, a directory or a socket); "
                              f"give {what} as a regular file.")
        if info.st_size > limit:
            raise SourceError(f"{path} has {info.st_size:,} bytes, more than {what} may have ({limit:,}).")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while read, or its size was not what stat said (/proc)
            raise SourceError(f"{path} has more than the {limit:,} bytes {what} may have.")
        return b"".join(chunks)
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror}).") from None
    finally:
        os.close(fd)


def read_source(path: str | Path) -> str:
    """Read an environment file: a regular UTF-8 file of at most ``ENV_FILE_BYTES``, else one sentence."""
    return read_text(path, ENV_FILE_BYTES, "an environment file (a UTF-8 Python file)")


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """``read_bytes`` as UTF-8 text."""
    try:
        return read_bytes(path, limit, what).decode("utf-8-sig")  # Python accepts a leading byte-order mark
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text; save {what} as UTF-8.") from None
