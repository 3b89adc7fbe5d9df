"""Which files' episodes may share a worker: those that a registered check vouches for.

A worker that hosts several episodes of one file gives each its own slot: its own instance,
module namespace and module-level ``random``. The rest of the process is shared (other modules'
attributes, the decimal context, its neighbours' objects, memory and CPU), so a file could read
it and play differently beside neighbours than alone. ``Sandbox.open(share=n)`` therefore shares
a worker only for a file that a check registered here vouches for; any other file gets a worker
per episode, whatever the caller asked. The built-in families register theirs on import (the text
is exactly a family's rendering, and a test plays every family shared and alone); nothing a file
contains can register one. A process that never imported them shares nothing, which costs workers,
never correctness; a Ray actor imports what its driver's checks came from (``vouching_modules``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_CHECKS: list[Callable[[str], bool]] = []


def vouch(check: Callable[[str], bool]) -> None:
    """Let episodes of the sources ``check`` answers True for share workers (``check`` must never raise)."""
    if check not in _CHECKS:
        _CHECKS.append(check)


def may_share(source: str) -> bool:
    """Whether episodes of ``source`` may share a worker."""
    return any(check(source) for check in _CHECKS)


def vouching_modules() -> list[str]:
    """The spadegym modules whose checks are registered: another process imports them to vouch alike."""
    return sorted({check.__module__ for check in _CHECKS if check.__module__.startswith("spadegym.")})


@contextmanager
def vouched(check: Callable[[str], bool]) -> Iterator[None]:
    """``vouch`` for the duration of a ``with`` block (tests that share a file of their own)."""
    added = check not in _CHECKS
    vouch(check)
    try:
        yield
    finally:
        if added:
            _CHECKS.remove(check)
