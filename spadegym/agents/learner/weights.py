"""A checkpoint's ``weights.npz``, read as data: every member's shape and dtype are checked against the learner's
settings from the zip directory and the ``.npy`` headers before any array is allocated.

A deflated array of a gigabyte fits in a megabyte, and numpy allocates what a header declares before it reads a
byte of data; an object array would unpickle. So nothing is loaded until every member is the array the scorer
expects: its name, a plain numeric dtype, and a shape the settings allow.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
from numpy.lib import format as npy

#: The scorer's tables: ``rows`` lists the hash rows a checkpoint stores, E and u hold those rows, b and w are whole.
TABLES = ("E", "u", "b", "w")
ROW_TABLES = ("E", "u")
MEMBERS = ("rows", *(prefix + key for key in TABLES for prefix in ("p_", "m_", "v_")))
#: The largest .npy header numpy writes is far below this; a longer one is not an array numpy wrote.
HEADER_BYTES = 1 << 16


class WeightsError(ValueError):
    """A ``weights.npz`` that is not the arrays a learner of the given settings saves."""


def expected_shapes(n_rows: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """The shape of every member for a checkpoint that stores ``n_rows`` rows of a scorer with ``hidden`` units."""
    shapes: dict[str, tuple[int, ...]] = {"rows": (n_rows,)}
    for prefix in ("p_", "m_", "v_"):
        shapes[prefix + "E"], shapes[prefix + "u"] = (n_rows, hidden), (n_rows,)
        shapes[prefix + "b"], shapes[prefix + "w"] = (hidden,), (hidden,)
    return shapes


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype]:
    """A member's declared shape and dtype, from its .npy header alone (only the header is inflated)."""
    with archive.open(info) as member:
        try:
            version = npy.read_magic(member)
            if version == (1, 0):
                shape, fortran, dtype = npy.read_array_header_1_0(member, max_header_size=HEADER_BYTES)
            elif version == (2, 0):
                shape, fortran, dtype = npy.read_array_header_2_0(member, max_header_size=HEADER_BYTES)
            else:
                raise ValueError(f"npy format {version}")
        except (ValueError, SyntaxError, TypeError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise WeightsError(f"{info.filename} is not a numpy array ({str(exc)[:80]})") from None
    return tuple(shape), dtype


def _check_member(name: str, shape: tuple[int, ...], dtype: np.dtype, want: tuple[int, ...]) -> None:
    kinds = "iu" if name == "rows" else "f"
    if dtype.hasobject or dtype.kind not in kinds or dtype.itemsize > 8:
        raise WeightsError(f"{name} has dtype {dtype}, where the learner saves "
                           f"{'integers' if name == 'rows' else 'floats'}")
    if shape != want:
        raise WeightsError(f"{name} has shape {shape}, where the checkpoint's settings give {want}")


def read_weights(path: Path, hash_bits: int, hidden: int) -> dict[str, np.ndarray]:
    """The arrays of ``path`` for a scorer of ``2**hash_bits`` rows and ``hidden`` units; ``WeightsError`` (one
    phrase) for a member that is missing, extra, not a plain numeric array, or of a shape the settings do not give."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise WeightsError(f"it is not an npz archive ({exc})") from None
    with archive:
        infos = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
        if sorted(infos) != sorted(MEMBERS):
            missing, extra = sorted(set(MEMBERS) - set(infos)), sorted(set(infos) - set(MEMBERS))
            raise WeightsError(f"its arrays are not the learner's ({'missing ' + ', '.join(missing) if missing else ''}"
                               f"{'; ' if missing and extra else ''}{'unexpected ' + ', '.join(extra)[:200] if extra else ''})")
        headers = {name: _header(archive, info) for name, info in infos.items()}
        n_rows = headers["rows"][0][0] if len(headers["rows"][0]) == 1 else -1
        if not 0 <= n_rows <= 1 << hash_bits:
            raise WeightsError(f"rows has shape {headers['rows'][0]}, where the settings allow at most "
                               f"{1 << hash_bits} rows")
        for name, want in expected_shapes(n_rows, hidden).items():
            _check_member(name, *headers[name], want)
        state = {name: _array(archive, info) for name, info in infos.items()}
    rows = state["rows"]
    if rows.size and (rows.min() < 0 or rows.max() >= 1 << hash_bits):
        raise WeightsError(f"rows names hash rows outside 0..{(1 << hash_bits) - 1}")
    return state


def _array(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One member whose header passed the checks, read without pickle."""
    with archive.open(info) as member:
        try:
            return npy.read_array(member, allow_pickle=False, max_header_size=HEADER_BYTES)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise WeightsError(f"{info.filename} is damaged ({str(exc)[:80]})") from None
