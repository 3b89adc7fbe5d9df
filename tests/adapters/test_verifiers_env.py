"""verifiers, from its own entry points, plays spadegym levels against a local OpenAI-compatible server.

A fresh install resolves verifiers 0.4 with the `verifiers` extra alone (v1 API only; its CLI is `vf-eval`) and
the 0.3 line beside OpenEnv (the dev extra: the v1 API with the CLI `eval`, and the classic API:
`verifiers.load_environment(name, ...)` and the classic `vf-eval`). This venv's version is tested here; the
other line's through the interpreter named by SPADEGYM_VERIFIERS_04_PYTHON (.ci/run makes one), skipped without.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

# Found, not imported: every xdist worker collects this module, and importing verifiers is ~9 CPU s.
if importlib.util.find_spec("verifiers") is None:
    pytest.skip("the verifiers extra is not installed", allow_module_level=True)

from spadegym_testing.fake_server import FakeOpenAIServer  # noqa: E402

VERSION = tuple(int(p) for p in version("verifiers").split(".")[:2])
OTHER_PYTHON = os.environ.get("SPADEGYM_VERIFIERS_04_PYTHON", "")
#: verifiers' commands import it (and spadegym) afresh: minutes each on a loaded machine.
pytestmark = pytest.mark.timeout(900)

LEVEL = '''
class DoorEnv:
    max_turns = 4

    def reset(self, seed=None):
        return "A closed door. Moves: wait, go.", {}

    def step(self, action):
        won = action == "go"
        return ("You are through." if won else "Nothing happens."), float(won), won, False, {}
'''


def wait_then_go(request: dict, index: int) -> str:
    """The player waits on its first turn and goes on the next: a two-turn episode that wins."""
    turns = sum(1 for m in request["messages"] if m["role"] == "user")
    return "I wait. \\boxed{wait}" if turns == 1 else "Now \\boxed{go}"


def v1_eval(python: str, levels: Path, out: Path, server: FakeOpenAIServer) -> subprocess.CompletedProcess:
    """verifiers' v1 eval command of the install that ``python`` runs (0.3: ``eval``; 0.4: ``vf-eval``).

    0.3's rollouts run in-process (``--no-serve``): its worker pool re-imports verifiers in each
    spawned worker, and the examples' test (``tests/docs/test_examples.py``) plays through that pool.
    """
    return subprocess.run(v1_eval_argv(python, levels, out, server), env={**os.environ, "SPADEGYM_TEST_KEY": "local"},
                          capture_output=True, text=True, timeout=600)


def v1_eval_argv(python: str, levels: Path, out: Path, server: FakeOpenAIServer) -> list[str]:
    bin_dir = Path(python).parent
    classic = (bin_dir / "eval").exists()
    command = bin_dir / "eval" if classic else bin_dir / "vf-eval"
    return [str(command), "spadegym-verifiers", "--env.taskset.levels", str(levels), "--env.taskset.tasks", "2",
            "--model", "fake-model", "--client.base-url", server.url, "--client.api-key-var", "SPADEGYM_TEST_KEY",
            "--num-rollouts", "1", "--no-rich", "--no-push", "--output-dir", str(out),
            *(["--no-serve"] if classic else [])]


def logged_rewards(done: subprocess.CompletedProcess) -> list[str]:
    """The reward each finished rollout is logged with (verifiers logs ``rollout done: ... reward=R``)."""
    return [line.split("reward=")[1].split()[0] for line in (done.stdout + done.stderr).splitlines()
            if "rollout done" in line]


def test_verifiers_eval_runs_multi_turn_episodes_and_records_the_return(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    with FakeOpenAIServer(wait_then_go) as server:
        done = v1_eval(sys.executable, tmp_path, tmp_path / "out", server)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 4  # two episodes of two turns
    assert logged_rewards(done) == ["1.000", "1.000"]  # the return is recorded before the rollout is logged
    records = [json.loads(line) for line in next((tmp_path / "out").glob("*/traces.jsonl")).read_text().splitlines()]
    traces = [trace for record in records for trace in record["traces"]]
    assert len(traces) == 2
    for trace in traces:
        assert trace["rewards"]["return"]["score"] == 1.0
        assert trace["info"] == {"level_id": "door", "turns": 2}
    assert server.requests[0]["messages"][0]["content"].endswith("\\boxed{...}.")  # the system prompt


def test_the_taskset_yields_level_instances_from_a_pool(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    from spadegym.adapters.verifiers_env import SpadegymTaskset, SpadegymTasksetConfig

    tasks = list(SpadegymTaskset(SpadegymTasksetConfig(id="spadegym-verifiers", levels=str(tmp_path), tasks=3)))
    assert [t.data.info["level_id"] for t in tasks] == ["door"] * 3
    assert len({t.data.info["seed"] for t in tasks}) == 3


def test_the_v1_api_loads_the_env_from_its_config(tmp_path: Path) -> None:
    import verifiers.v1 as vf

    import spadegym_verifiers

    (tmp_path / "door.py").write_text(LEVEL)
    env = vf.load_environment(spadegym_verifiers.env_config(levels=str(tmp_path), tasks=2))
    assert isinstance(env, spadegym_verifiers.SpadegymEnv)
    assert [t.data.info["level_id"] for t in env.taskset.load()] == ["door", "door"]


@pytest.mark.skipif(VERSION >= (0, 4), reason="verifiers 0.4 has no classic API")
def test_the_classic_api_loads_by_name_and_its_vf_eval_scores_the_return(tmp_path: Path) -> None:
    import verifiers as vf

    (tmp_path / "door.py").write_text(LEVEL)
    env = vf.load_environment("spadegym-verifiers", levels=str(tmp_path), tasks=2)
    assert env.dataset[0]["prompt"][-1]["content"] == "A closed door. Moves: wait, go."
    with FakeOpenAIServer(wait_then_go) as server:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "vf-eval"), "spadegym-verifiers", "-a",
             json.dumps({"levels": str(tmp_path), "tasks": 2}), "-m", "fake-model", "-b", server.url,
             "-k", "SPADEGYM_TEST_KEY", "-n", "2", "-r", "1", "--disable-tui", "--save-results",
             "--output-dir", str(tmp_path / "out"), "--disable-env-server"],  # the examples' test uses its env server
            env={**os.environ, "SPADEGYM_TEST_KEY": "local"}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 4
    assert "episode_return: avg - 1.000" in done.stdout


@pytest.mark.skipif(not OTHER_PYTHON, reason="SPADEGYM_VERIFIERS_04_PYTHON names no interpreter with verifiers 0.4 "
                                             "(.ci/run makes one)")
def test_verifiers_0_4_plays_levels_from_its_own_entry_points(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    with FakeOpenAIServer(wait_then_go) as server:
        # One interpreter (each import of verifiers is ~9 CPU s): vf-eval's own script first, as its console
        # command runs it (nothing imported before it finds the plugin), then the Python API's checks.
        argv = v1_eval_argv(OTHER_PYTHON, tmp_path, tmp_path / "out", server)
        done = subprocess.run([OTHER_PYTHON, "-c", (
            "import runpy, sys\n"
            f"sys.argv = {argv!r}\n"
            "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
            "except SystemExit as stop:\n    assert not stop.code, stop.code\n"
            "import importlib.metadata as m, verifiers.v1 as vf, spadegym_verifiers as s\n"
            "print('check:', m.version('verifiers'))\n"
            f"env = vf.load_environment(s.env_config(levels={str(tmp_path)!r}, tasks=2))\n"
            "print('check:', type(env).__name__)\n"
            "try:\n    s.load_environment(levels='x')\nexcept RuntimeError as e:\n    print('check:', e)\n")],
            env={**os.environ, "SPADEGYM_TEST_KEY": "local"}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    assert logged_rewards(done) == ["1.000", "1.000"]
    version, env_class, refusal = [line.removeprefix("check: ") for line in done.stdout.splitlines()
                                   if line.startswith("check: ")]
    assert version.startswith("0.4") and env_class == "SpadegymEnv" and "vf-eval spadegym-verifiers" in refusal
