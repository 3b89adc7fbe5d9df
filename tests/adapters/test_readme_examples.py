"""The README's "Other frameworks" examples, run as written (placeholders: the port, the model, the server)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"
ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
BIN = str(Path(sys.executable).parent)


def examples() -> dict[str, list[tuple[str, str]]]:
    """Subsection title -> its fenced blocks (language, code), from the "Other frameworks" section."""
    text = README.read_text()
    section = text.split("\n## Other frameworks\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[tuple[str, str]]] = {}
    for part in section.split("\n### ")[1:]:
        title, body = part.split("\n", 1)
        found[title.strip()] = re.findall(r"```(\w+)\n(.*?)```", body, re.S)
    return found


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    shutil.copytree(ENVS, tmp_path / "pool")
    return tmp_path


def run(lang: str, code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euc", code]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_every_framework_has_an_example() -> None:
    assert {"Gymnasium", "OpenEnv", "verifiers", "TRL", "reasoning-gym"} <= set(examples())


def test_the_gymnasium_example_runs(pool: Path) -> None:
    pytest.importorskip("gymnasium")
    [(lang, code)] = examples()["Gymnasium"]
    run(lang, code, pool)


def test_the_openenv_examples_run_against_spadegym_serve(pool: Path) -> None:
    pytest.importorskip("openenv.core.env_server")
    from test_openenv import spadegym_serve

    (_, play), (_, check) = examples()["OpenEnv"]
    with spadegym_serve("pool/", cwd=pool) as url:
        port = url.rsplit(":", 1)[1]
        assert run("python", play.replace("8000", port), pool).stdout.strip()
        assert run("python", check.replace("8000", port), pool).stdout.strip() == "{}"


def test_the_verifiers_example_runs_against_a_local_server(pool: Path) -> None:
    pytest.importorskip("verifiers.v1")
    from spadegym.llm.fake_server import FakeOpenAIServer

    [(lang, code)] = examples()["verifiers"]
    with FakeOpenAIServer(default="\\boxed{1}") as server:
        code = code.replace("MODEL", "fake-model").replace("http://127.0.0.1:8000/v1", server.url)
        run(lang, code.rstrip() + " --output-dir out", pool, OPENAI_API_KEY="local")
        assert len(server.requests) >= 4
    assert list((pool / "out").glob("*/traces.jsonl"))


def test_the_trl_example_trains_a_step(pool: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trl")
    from test_trl_env import tiny_tool_caller

    [(_, code)] = examples()["TRL"]
    model, tokenizer = tiny_tool_caller()
    monkeypatch.chdir(pool)
    namespace = {"model": model, "tokenizer": tokenizer}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["trainer"].state.global_step == 1


def test_the_reasoning_gym_example_writes_a_pool_that_passes_the_gate(pool: Path) -> None:
    pytest.importorskip("reasoning_gym")
    [(lang, code)] = examples()["reasoning-gym"]
    done = run(lang, code, pool)
    assert sorted(p.name for p in (pool / "pool-rg").iterdir()) == ["rg_basic_arithmetic_0.py",
                                                                   "rg_basic_arithmetic_1.py"]
    assert "invalid" not in done.stdout


def test_the_sources_example_runs_a_mixed_curriculum(pool: Path) -> None:
    pytest.importorskip("reasoning_gym")
    from spadegym.store import RunStore

    (_, config), (_, command) = examples()["Sources beside the designer"][:2]
    (pool / "mixed.toml").write_text(config)
    tiny = ("--set envs_per_round=6 --set plays=2 --set hint_plays=2 --set group_size=2 --set heldout.seeds=1"
            " --set heldout.levels=easiest --set heldout.families='[\"take_away\"]' --set tensorboard=false --no-report")
    run("bash", f"{command.strip()} {tiny}", pool)
    with RunStore.open(pool / "runs" / "mixed") as store:
        sources = {row["meta"].get("source") for row in store.environments(valid_only=True)}
    assert {"mutation", "reasoning-gym:basic_arithmetic", "pool:pool"} <= sources


def test_the_remote_source_example_plays_an_openenv_server_in_a_run(pool: Path) -> None:
    pytest.importorskip("openenv.core.env_server")
    from test_openenv import spadegym_serve

    from spadegym.executor.openenv import RemoteLevel
    from spadegym.store import RunStore

    (_, config), (_, command) = examples()["Sources beside the designer"][2:4]
    tiny = ("--set envs_per_round=4 --set plays=2 --set hint_plays=2 --set group_size=2 --set heldout.seeds=1"
            " --set heldout.levels=easiest --set heldout.families='[\"take_away\"]' --set tensorboard=false"
            " --set skills='[\"Logical Deduction\"]' --set skills_per_round=1 --no-report")
    with spadegym_serve("pool/", cwd=pool) as url:
        (pool / "remote.toml").write_text(config.replace("http://127.0.0.1:8000", url))
        run("bash", f"{command.strip()} {tiny}", pool)
    with RunStore.open(pool / "runs" / "remote") as store:
        [remote] = [row for row in store.environments() if RemoteLevel.parse(row["source"])]
        episodes = store.episodes(env_id=remote["env_id"], split="train")
    assert episodes and all(e["failure"] is None for e in episodes)
