"""Every file under examples/ does what the docs say, run as a user would from a checkout's root.

Each test copies examples/ into a fresh directory and runs the file there. Placeholders a user
replaces are replaced here too: a server's port, a model's name or directory, and the budgets of
the red-team example (a search of 200 proposals is minutes; the test runs 4 on the same command).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
BIN = str(Path(sys.executable).parent)
TINY_RUN = ("--set envs_per_round=4 --set plays=2 --set hint_plays=2 --set group_size=2 --set heldout.seeds=1"
            " --set heldout.levels=easiest --set heldout.families='[\"take_away\"]' --set tensorboard=false"
            " --no-report")

sys.path.insert(0, str(ROOT / "tests" / "adapters"))  # the adapters' tests' helpers: a served pool, a tiny model


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A directory holding a copy of examples/, as the root of a checkout does."""
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


#: Examples that start verifiers' commands import it several times over: minutes on a loaded machine.
SLOW = 900


def run(command: list[str] | str, cwd: Path, timeout: int = 300, **env: str) -> subprocess.CompletedProcess:
    args = ["bash", "-euo", "pipefail", "-c", command] if isinstance(command, str) else command
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **env})
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done


def test_the_example_pool_passes_the_gate_and_plays(checkout: Path) -> None:
    done = run(["spadegym", "validate", "examples/pool/", "--json"], checkout)
    assert done.stdout.count('"valid": true') == len(list((EXAMPLES / "pool").glob("*.py")))
    played = run(["spadegym", "play", "examples/pool/number_guess.py", "--agent", "random", "--episodes", "4"], checkout)
    assert "4 episodes" in played.stdout


def test_the_scripted_agent_file_replays_its_actions(checkout: Path) -> None:
    done = run(["spadegym", "play", "examples/pool/number_guess.py", "--agent", "scripted:examples/guess_script.txt",
                "--seed", "0", "--json"], checkout)
    [episode] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    actions = [turn["action"] for turn in episode["turns"]]
    assert actions == ["50", "25", "12", "6", "3", "2", "1"][: len(actions)] and actions


@pytest.mark.parametrize("config", sorted((EXAMPLES / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_config_is_a_valid_run_configuration(config: Path) -> None:
    from spadegym.loop import load_config

    loaded = load_config(config)
    assert loaded.rounds >= 1


def test_the_python_api_example_runs(checkout: Path) -> None:
    done = run([sys.executable, "examples/python_api.py"], checkout)
    assert "round 1:" in done.stdout and "2 rounds" in done.stdout


def test_the_gymnasium_example_runs(checkout: Path) -> None:
    pytest.importorskip("gymnasium")
    assert run([sys.executable, "examples/gymnasium_play.py"], checkout).stdout.strip()


@pytest.fixture(scope="module")
def served_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`spadegym serve examples/pool/` from a copy of examples/, started once for the module's OpenEnv examples
    (each session on it is its own)."""
    pytest.importorskip("spadegym.adapters.openenv_import")
    from test_openenv import spadegym_serve

    root = tmp_path_factory.mktemp("served")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    with spadegym_serve("examples/pool/", cwd=root) as url:
        yield url


def test_the_openenv_examples_run_against_spadegym_serve(checkout: Path, served_pool: str) -> None:
    port = served_pool.rsplit(":", 1)[1]
    for name in ("openenv_play.py", "openenv_check.py"):
        script = checkout / "examples" / name
        script.write_text(script.read_text().replace("8001", port))
    assert run([sys.executable, "examples/openenv_play.py"], checkout).stdout.strip()
    assert run([sys.executable, "examples/openenv_check.py"], checkout).stdout.strip() == "{}"


def _verifiers_line() -> tuple[int, int]:
    from importlib.metadata import version

    return tuple(int(p) for p in version("verifiers").split(".")[:2])


VERIFIERS_04 = os.environ.get("SPADEGYM_VERIFIERS_04_PYTHON", "")  # an interpreter with verifiers 0.4 (.ci/run)


@pytest.mark.timeout(SLOW)
@pytest.mark.skipif(not VERIFIERS_04, reason="SPADEGYM_VERIFIERS_04_PYTHON names no interpreter with verifiers 0.4")
def test_the_verifiers_0_4_example_runs_against_a_local_server(checkout: Path) -> None:
    from spadegym_testing.fake_server import FakeOpenAIServer

    code = (checkout / "examples" / "verifiers_eval.sh").read_text()
    with FakeOpenAIServer(default="\\boxed{1}") as server:
        code = code.replace("MODEL", "fake-model").replace("http://127.0.0.1:8000/v1", server.url)
        run(code.rstrip() + " --output-dir out", checkout, timeout=SLOW, OPENAI_API_KEY="local",
            PATH=f"{Path(VERIFIERS_04).parent}:{os.environ['PATH']}")
        assert len(server.requests) >= 4
    assert list((checkout / "out").glob("*/traces.jsonl"))
    loaded = run([VERIFIERS_04, "examples/verifiers_load.py"], checkout)
    assert loaded.stdout.strip().endswith("SpadegymEnv 4 rows")


@pytest.mark.timeout(SLOW)
def test_the_verifiers_0_3_examples_run_against_a_local_server(checkout: Path) -> None:
    if importlib.util.find_spec("verifiers") is None:  # found, not imported: the commands below import it
        pytest.skip("verifiers is not installed")
    if _verifiers_line() >= (0, 4):
        pytest.skip("this venv has verifiers 0.4, which has no classic API")
    from spadegym_testing.fake_server import FakeOpenAIServer

    code = (checkout / "examples" / "verifiers_eval_0_3.sh").read_text()
    with FakeOpenAIServer(default="\\boxed{1}") as server:
        code = code.replace("MODEL", "fake-model").replace("http://127.0.0.1:8000/v1", server.url)
        # The v1 command plays through an env server in a spawned process (one: the pool's broker would import
        # verifiers a third time, ~10 CPU s); the classic one in-process, as test_verifiers_env.py's does.
        code = code.replace("--no-push", "--no-push --output-dir out --serve.pool.type static --serve.pool.num-workers 1")
        code = code.replace("--disable-tui", "--disable-tui --disable-env-server")
        done = run(code, checkout, timeout=SLOW, OPENAI_API_KEY="local")
        assert len(server.requests) >= 8  # four episodes through each command
    assert list((checkout / "out").glob("*/traces.jsonl")) and "episode_return: avg" in done.stdout
    loaded = run([sys.executable, "examples/verifiers_load.py"], checkout)
    assert loaded.stdout.strip().endswith("SpadegymMultiTurnEnv 4 rows")


def test_the_trl_example_trains_a_step(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trl")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")  # the user's own trainer pings the Hub; this user is offline
    from test_trl_env import tiny_tool_caller

    model, tokenizer = tiny_tool_caller()
    model.save_pretrained(checkout / "model")
    tokenizer.save_pretrained(checkout / "model")
    done = run([sys.executable, "examples/trl_train.py", "model"], checkout)
    assert "steps: 1" in done.stdout
    assert "`gradient_checkpointing` is deprecated" not in done.stderr  # the example uses the current name


def test_the_reasoning_gym_example_writes_a_pool_that_passes_the_gate(checkout: Path) -> None:
    pytest.importorskip("reasoning_gym")
    done = run((checkout / "examples" / "reasoning_gym_import.sh").read_text(), checkout)
    assert sorted(p.name for p in (checkout / "pool-rg").iterdir()) == ["rg_basic_arithmetic_0.py",
                                                                       "rg_basic_arithmetic_1.py"]
    assert "invalid" not in done.stdout


def test_the_mixed_sources_example_runs(checkout: Path) -> None:
    pytest.importorskip("reasoning_gym")
    from spadegym.store import RunStore

    # One round: its six new levels come from every source.
    run(f"spadegym run --config examples/configs/mixed.toml --rounds 1 --out runs/mixed {TINY_RUN}"
        " --set envs_per_round=6", checkout)
    with RunStore.open(checkout / "runs" / "mixed") as store:
        sources = {row["meta"].get("source") for row in store.environments(valid_only=True)}
    assert {"mutation", "reasoning-gym:basic_arithmetic", "pool:pool"} <= sources


def test_the_remote_source_example_plays_an_openenv_server_in_a_run(checkout: Path, served_pool: str) -> None:
    from spadegym.store import RunStore

    config = checkout / "examples" / "configs" / "remote.toml"
    config.write_text(config.read_text().replace("http://127.0.0.1:8001", served_pool))
    # The example end to end, its report included (a remote level has no source to show).
    run(f"spadegym run --config examples/configs/remote.toml --rounds 1 --out runs/remote "
        f"{TINY_RUN.removesuffix(' --no-report')} --set skills='[\"Logical Deduction\"]' --set skills_per_round=1",
        checkout)
    with RunStore.open(checkout / "runs" / "remote") as store:
        [remote] = [row for row in store.environments() if row["kind"] == "remote"]
        episodes = store.episodes(env_id=remote["env_id"], split="train")
    assert episodes and all(e["failure"] is None for e in episodes)
    assert "openenv:" in (checkout / "runs" / "remote" / "report.html").read_text()
    run("spadegym report runs/remote", checkout)  # and rewritten from the store alone


def test_the_redteam_example_finds_failures_and_gates_on_them(checkout: Path) -> None:
    from spadegym_testing.fake_server import FakeOpenAIServer

    script = (checkout / "examples" / "redteam.sh").read_text()
    with FakeOpenAIServer(default="\\boxed{1}") as server:
        script = re.sub(r"http://127\.0\.0\.1:800\d/v1", server.url, script)
        script = script.replace("--budget 200", "--budget 4 --set per_round=4 --set families='[\"take_away\"]'"
                                " --set confirm_seeds=2 --set minimise=false")
        done = subprocess.run(["bash", "-uo", "pipefail", "-c", script], cwd=checkout, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
                                                           "OPENAI_API_KEY": "local"})
    manifest = checkout / "suites" / "qwen" / "manifest.json"
    assert manifest.is_file(), done.stderr[-3000:]
    assert json.loads(manifest.read_text())["cases"], done.stdout[-2000:]  # the search found a case to score
    assert (checkout / "results.xml").is_file() and (checkout / "scorecard.html").is_file()
    assert (checkout / "results.json").read_text().strip()
    assert done.returncode in (0, 1), done.stderr[-3000:]  # the last line is a gate: 1 when the pass rate is low


def test_the_small_tool_use_run_in_self_play_md_prints_the_figures_the_page_states(checkout: Path) -> None:
    """docs/self-play.md quotes a command, its held-out figures and its time: the command prints those figures."""
    import re
    import shlex

    text = " ".join((ROOT / "docs" / "self-play.md").read_text(encoding="utf-8").split())
    command = re.search(r"A small run of the setting \(`(spadegym run [^`]+)`\)", text).group(1)
    stated = re.search(r"from (\d\.\d+) at round 0 to (\d\.\d+), (\d\.\d+) and (\d\.\d+) at rounds 3, 6 and 9", text)
    assert stated and re.search(r"\(\d+ (s|min) on a 2-core machine", text), "say the figures and the time"
    done = run([*shlex.split(command), "--out", "runs/tool-small"], checkout, timeout=600)
    heldout = re.findall(r"^round +(\d+) .* heldout (\d\.\d+)/", done.stdout, re.M)
    assert [(int(r), float(v)) for r, v in heldout] == list(zip((0, 3, 6, 9), map(float, stated.groups())))
