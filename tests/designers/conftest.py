"""Start scripted designer models behind a real local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from designer_model import DesignerModel

from spadegym_testing.fake_server import FakeOpenAIServer


@pytest.fixture
def serve() -> Iterator[Any]:
    """serve(model) -> a started FakeOpenAIServer answering with ``model``; stopped after the test."""
    servers: list[FakeOpenAIServer] = []

    def start(model: DesignerModel) -> FakeOpenAIServer:
        server = FakeOpenAIServer(model).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)  # stops it unless the test already did
