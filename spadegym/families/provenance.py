"""Which built-in family, if any, rendered a level: from its typed params, else from its text.

    level_family(level)        # ("grid_maze", {"size": 5, ...}) or None: the params a level carries, else its text
    rendering_family(source)   # "grid_maze", or None for any file the families did not write
    rendered_level(source)     # ("grid_maze", {"size": 5, ...}): the knobs too

A level a family renders carries its family and knobs as typed data from where it is made
(``Level.params``: a family's level, the mutation and edit designers', the red team's search and
uniform designers' and its shrink steps', a stored level's, ``Level.from_dict``), and
``level_family`` reads them there. Reading a file's text (its ``FAMILY`` and ``DIFFICULTY``
lines, the file accepted only when it is exactly that family's rendering) is the fallback for
a file that carries none: a pool file, an LLM-written file, an old store's level.

Episodes of one file may share a sandbox worker only when the file is a family's rendering
(``sandbox.sharing``; this module vouches for them when the families are imported): the
families' code is the project's, and a test plays every family shared and alone and finds the
same episodes. Any other file could reach state the process shares (other modules'
attributes, the decimal context, its neighbours' objects), so it gets a worker per episode.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any

from ..level import Level
from ..sandbox import sharing
from .registry import FamilyError, get_family

_NAME = re.compile(r"^FAMILY = (.+)$", re.MULTILINE)
_KNOBS = re.compile(r"^DIFFICULTY = (.+)$", re.MULTILINE)


def level_family(level: Level) -> tuple[str, dict[str, Any]] | None:
    """The family and knobs (as the family renders them, level-0 values filled in) that rendered ``level``:
    from its typed params where it carries a family, else recovered from its source (``rendered_level``)."""
    if level.family is not None:
        try:
            family = get_family(level.family)
            return family.name, family.check_knobs(level.knobs)
        except FamilyError:  # a family this process does not know (an imported one): none of its own
            return None
    return rendered_level(level.source) if level.source is not None else None


def rendering_family(source: str) -> str | None:
    """The name of the family whose ``render`` gives exactly ``source`` (its FAMILY and DIFFICULTY), else None."""
    found = _rendering(source)
    return found[0] if found else None


def rendered_level(source: str) -> tuple[str, dict] | None:
    """The family and knobs whose rendering is exactly ``source``, else None."""
    found = _rendering(source)
    return (found[0], ast.literal_eval(found[1])) if found else None


@functools.lru_cache(maxsize=256)  # a round opens the same few sources again and again
def _rendering(source: str) -> tuple[str, str] | None:
    """(family name, the DIFFICULTY literal) when ``source`` is exactly that family's rendering of those knobs."""
    name, knobs = _NAME.search(source), _KNOBS.search(source)
    if name is None or knobs is None:
        return None
    try:
        family = get_family(ast.literal_eval(name.group(1)))
        rendered = family.render(ast.literal_eval(knobs.group(1)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, FamilyError):
        return None
    return (family.name, knobs.group(1)) if rendered == source else None


def _is_rendering(source: str) -> bool:
    return rendering_family(source) is not None


sharing.vouch(_is_rendering)
