"""Shared pytest fixtures: one sandbox per session, the fixture environments' folder, and a guard that fails any
test during which something tried to reach a host other than this machine."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from spadegym.sandbox import Sandbox

FIXTURES = Path(__file__).parent / "fixtures"
CHECKOUT = Path(__file__).resolve().parent.parent

# The side environments scripts/setup-tests makes (verifiers 0.4, vLLM), unless a variable already names others:
# set at import, before any test module reads them.
for _variable, _folder in (("SPADEGYM_VERIFIERS_04_PYTHON", ".venv-verifiers"), ("SPADEGYM_VLLM_PYTHON", ".venv-vllm")):
    if not os.environ.get(_variable) and (CHECKOUT / _folder / "bin" / "python").exists():
        os.environ[_variable] = str(CHECKOUT / _folder / "bin" / "python")


#: Files that take longest (servers, trained models, whole runs): started first, so that no worker ends the session
#: with one of them alone while the other waits (``--dist loadfile`` keeps each file on one worker, so a module's
#: fixture is built once).
SLOWEST_FIRST = ("tests/adapters/test_trl_curriculum.py", "tests/train/test_llm_curriculum_benchmark.py",
                 "tests/docs/test_examples.py",
                 "tests/adapters/test_verifiers_curriculum.py", "tests/train/test_vllm_generation.py",
                 "tests/adapters/test_verifiers_env.py", "tests/train/test_selfplay_hf.py", "tests/executor/test_ray.py",
                 "tests/adapters/test_openenv_package.py", "tests/adapters/test_openenv_source.py",
                 "tests/redteam/test_redteam_cli.py", "tests/train/test_edit_designer.py",
                 "tests/train/test_export_model.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: file order kept


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


class OutboundListener:
    """A local listener every proxy variable points at: a client that honours them (httpx, requests, urllib, wandb,
    huggingface_hub) reaches it instead of the network, and it keeps the first line each one sent (the host asked
    for). Loopback stays direct through NO_PROXY, so the tests' own servers are untouched."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.attempts: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(512).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = ""
                with self.lock:  # counted before the client hears back, so it is charged to the test that sent it
                    self.attempts.append(first or "(a connection that sent nothing)")
                try:
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass

    def audit(self, event: str, args: tuple) -> None:
        """An audit hook: a socket of this process connecting anywhere but loopback counts as an attempt too
        (a client that ignores the proxy variables), and is stopped before a packet leaves."""
        if event == "socket.connect" and isinstance(args[1], tuple) and isinstance(args[1][0], str):
            host = args[1][0]
            if not (host.startswith("127.") or host in ("::1", "localhost", "0.0.0.0", "::")):
                with self.lock:
                    self.attempts.append(f"connect {host}:{args[1][1]}")
                raise ConnectionRefusedError(f"tests may not connect to {host}: only this machine is reachable")

    def take(self) -> list[str]:
        with self.lock:
            taken, self.attempts = self.attempts, []
        return taken


_OUTBOUND: OutboundListener | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Every process of the run (the controller, each worker and what they start) sends proxied traffic here."""
    global _OUTBOUND
    _OUTBOUND = OutboundListener()
    sys.addaudithook(_OUTBOUND.audit)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        os.environ[name] = os.environ[name.lower()] = _OUTBOUND.url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost,::1"


@pytest.fixture(autouse=True)
def no_connection_leaves_this_machine() -> Iterator[None]:
    """A test fails when anything tried to reach another host while it ran (counted at the local listener)."""
    assert _OUTBOUND is not None
    _OUTBOUND.take()
    yield
    if attempts := _OUTBOUND.take():
        pytest.fail(f"{len(attempts)} connection(s) tried to leave this machine during the test: {attempts[:3]}")
