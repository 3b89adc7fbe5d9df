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
