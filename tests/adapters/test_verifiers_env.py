"""verifiers: its own `eval` entry point plays spadegym levels against a local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from spadegym.llm.fake_server import FakeOpenAIServer  # noqa: E402

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


def test_verifiers_eval_runs_multi_turn_episodes_and_records_the_return(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    eval_cli = Path(sys.executable).parent / "eval"  # verifiers' own entry point, as its users run it
    with FakeOpenAIServer(wait_then_go) as server:
        done = subprocess.run(
            [str(eval_cli), "spadegym-verifiers", "--env.taskset.levels", str(tmp_path), "--env.taskset.tasks", "2",
             "--model", "fake-model", "--client.base-url", server.url, "--client.api-key-var", "SPADEGYM_TEST_KEY",
             "--num-rollouts", "1", "--no-rich", "--no-push", "--output-dir", str(tmp_path / "out")],
            env={**os.environ, "SPADEGYM_TEST_KEY": "local"}, capture_output=True, text=True, timeout=240,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 4  # two episodes of two turns
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
