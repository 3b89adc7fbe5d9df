"""Shared pytest fixtures: one sandbox per session, the fixture environments' folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spadegym.sandbox import Sandbox

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """A real sandbox (zygote + workers), shared by the whole session."""
    with Sandbox() as box:
        yield box


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/fixtures: well-behaved environments live in ``envs/``."""
    return FIXTURES


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has ended: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def still_running():
    """``still_running(pids, within_s)``: the pids that have not ended within ``within_s`` seconds."""
    import time

    def check(pids: list[int], within_s: float = 30.0) -> list[int]:
        deadline = time.monotonic() + within_s
        while True:
            alive = [p for p in pids if _running(p)]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)

    return check
