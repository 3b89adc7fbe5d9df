"""`spadegym serve` is an OpenEnv server: OpenEnv's own clients play multi-step episodes over its WebSocket."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("spadegym.adapters.openenv_import", reason="the openenv extra is not installed")

import httpx  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402

from spadegym.adapters.openenv_client import OpenEnvLevel, SpadegymClient  # noqa: E402
from spadegym.adapters.openenv_server import SpadegymAction  # noqa: E402

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
SESSIONS = 12  # well above OpenEnv's default of one session at a time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def spadegym_serve(source: str, cwd: Path | None = None) -> Iterator[str]:
    """The real server, started by the real CLI, on 127.0.0.1; yields its URL once /health answers."""
    with serve_process(source, cwd) as (_proc, url):
        yield url


@contextmanager
def serve_process(source: str, cwd: Path | None = None, port: int | None = None
                  ) -> Iterator[tuple[subprocess.Popen, str]]:
    """``spadegym serve`` as a process (to kill in a test) and its URL, once /health answers."""
    port = port or free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spadegym", "serve", source, "--port", str(port)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # importing OpenEnv takes seconds, many on a loaded machine
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out = proc.communicate()[0].decode() if proc.stdout else ""
                pytest.fail(f"spadegym serve did not come up: {out[-2000:]}")
            time.sleep(0.2)
        yield proc, url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a graceful stop waits for open sessions, longer on a loaded machine
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with spadegym_serve(str(ENVS)) as url:
        yield url


def test_a_typed_client_plays_a_whole_episode_and_gets_the_return(server: str) -> None:
    with SpadegymClient(base_url=server).sync() as env:
        result = env.reset(seed=3, level_id="number_guess")
        assert result.observation.level_id == "number_guess" and not result.done
        assert result.observation.valid_actions == [str(i) for i in range(1, 13)]
        low, high = 1, 12
        for _ in range(4):  # binary search: every turn is one more WebSocket step of the same session
            guess = (low + high) // 2
            result = env.step(SpadegymAction(message=f"I try \\boxed{{{guess}}}"))
            text = result.observation.text
            if result.done:
                break
            low, high = (guess + 1, high) if "higher" in text else (low, guess - 1)
        assert result.done
        assert result.observation.metadata["return"] == result.reward
        assert env.state().step_count == result.observation.turn


def test_a_reply_without_a_box_is_a_format_failure_not_an_error(server: str) -> None:
    with SpadegymClient(base_url=server).sync() as env:
        env.reset(seed=0, level_id="number_guess")
        result = env.step(SpadegymAction(message="seven"))
        assert result.reward == 0.0 and not result.done
        assert result.observation.metadata["format_failure"] is True
        assert "\\boxed" in result.observation.text


def test_many_sessions_play_at_once_each_with_its_own_episode(server: str) -> None:
    async def one(i: int) -> tuple[int, str, int]:
        async with SpadegymClient(base_url=server) as env:
            first = await env.reset(seed=i, level_id="key_door")
            turns = 0
            result = first
            while not result.done and turns < 3:
                result = await env.step(SpadegymAction(message="\\boxed{look}"))
                turns += 1
            state = await env.state()
            return state.seed, first.observation.text, state.step_count

    async def all_at_once() -> list[tuple[int, str, int]]:
        return await asyncio.gather(*(one(i) for i in range(SESSIONS)))

    results = asyncio.run(all_at_once())
    assert [seed for seed, _, _ in results] == list(range(SESSIONS))
    assert all(steps >= 1 for _, _, steps in results)


def test_openenv_generic_client_speaks_the_raw_wire_format(server: str) -> None:
    with GenericEnvClient(base_url=server).sync() as env:
        result = env.reset(seed=1, level_id="arithmetic_chain")
        assert isinstance(result.observation["text"], str) and result.observation["text"]
        result = env.step({"message": "\\boxed{0}"})
        assert isinstance(result.reward, float)


def test_an_openenv_url_is_checked_over_the_wire_as_a_level(server: str) -> None:
    check = OpenEnvLevel(server).check(seed=5, probe_action="\\boxed{1}")
    assert check.ok, check.failed
    assert {"reachable", "replies_in_limits", "seed_determinism", "observation_is_data"} <= set(check.passed)


def test_a_spadegym_agent_plays_an_openenv_url_and_gets_episode_records(server: str) -> None:
    from spadegym.agents.registry import make_agent

    level = OpenEnvLevel(server, level_id="guess", reset_args={"level_id": "number_guess"}, send_reply=True)
    episodes = asyncio.run(level.play(make_agent("random", seed=0), episodes=3, seed=10))
    assert [e.seed for e in episodes] == [10, 11, 12]
    for episode in episodes:
        assert episode.env_id == "guess" and 1 <= len(episode.turns) <= 4 and episode.failure is None
        assert episode.ret == (episode.turns[-1].reward if episode.terminated else 0.0)
        assert all(turn.action in {str(i) for i in range(1, 13)} for turn in episode.turns)


def test_an_unreachable_openenv_url_fails_the_check_in_one_sentence() -> None:
    check = OpenEnvLevel(f"http://127.0.0.1:{free_port()}").check()
    assert not check.ok and "did not answer" in check.failed["reachable"]


def test_http_step_before_reset_is_a_clear_refusal_not_a_bare_500(server: str) -> None:
    response = httpx.post(f"{server}/step", json={"action": {"message": "\\boxed{1}"}}, timeout=60)
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert "call reset first" in detail and "/ws" in detail


def test_each_episode_has_an_id_in_the_state(server: str) -> None:
    with SpadegymClient(base_url=server).sync() as env:
        env.reset(seed=0, level_id="number_guess")
        first = env.state().episode_id
        env.reset(seed=1, level_id="number_guess")
        second = env.state().episode_id
    assert first and second and first != second


def test_metadata_names_the_version_and_explains_the_levels(server: str) -> None:
    import spadegym

    metadata = httpx.get(f"{server}/metadata", timeout=60).json()
    assert metadata["version"] == spadegym.__version__
    assert "number_guess" in metadata["readme_content"] and 'metadata["return"]' in metadata["readme_content"]


def test_the_server_environment_pays_step_rewards_or_the_return(tmp_path: Path) -> None:
    import shutil

    from spadegym.adapters import PoolLevels
    from spadegym.adapters.openenv_server import SpadegymEnvironment

    shutil.copy(ENVS / "key_door.py", tmp_path / "key_door.py")
    for mode, expected in (("step", [0.0, 0.1, 0.0, 1.0]), ("return", [0.0, 0.0, 0.0, 1.0])):
        env = SpadegymEnvironment(PoolLevels([tmp_path]), rewards=mode, hinted=True)
        first = env.reset(seed=0)
        room = first.text.split("hidden in the ")[1].split()[0]
        paid = [env.step(SpadegymAction(message=f"\\boxed{{{a}}}")).reward
                for a in (f"go {room}", "take key", "go back", "open door")]
        env.close()
        assert paid == pytest.approx(expected)


def test_spadegym_imports_openenv_without_its_unused_web_ui() -> None:
    code = ("import sys, spadegym.adapters.openenv_server, spadegym.adapters.openenv_client, openenv.core\n"
            "assert 'gradio' not in sys.modules and openenv.core.create_web_interface_app is None\n"
            "import gradio\n")  # ... and anyone else's later import of Gradio still works
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "ENABLE_WEB_INTERFACE"})
    assert done.returncode == 0, done.stderr[-2000:]
