"""verifiers, from its own eval command, plays the live curriculum `spadegym curriculum` serves; the service is
killed and resumed between two evaluations.

One test for the whole contract (each verifiers command imports for a long while). It runs verifiers 0.4 when
the side environment scripts/setup-tests makes is there (SPADEGYM_VERIFIERS_04_PYTHON), else this venv's line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from spadegym.llm.fake_server import FakeOpenAIServer  # noqa: E402
from spadegym.store import RunStore  # noqa: E402

ROOT = Path(__file__).parents[2]
CONFIG = ROOT / "examples" / "configs" / "curriculum.toml"
PYTHON = os.environ.get("SPADEGYM_VERIFIERS_04_PYTHON") or sys.executable
#: A round: 2 levels x (1 no-hint + 1 hinted group) x 2 rollouts (examples/configs/curriculum.toml).
PLAYS_PER_ROUND = 8
pytestmark = pytest.mark.timeout(900)


def first_action(request: dict, index: int) -> str:
    """A player that takes the first action the last observation lists."""
    text = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
    listed = re.search(r"^actions: (.+)$", text, re.M)
    return f"\\boxed{{{listed.group(1).split(', ')[0] if listed else 'go'}}}"


def serve(run: Path) -> subprocess.Popen:
    """`spadegym curriculum` for ``run``, once it has named itself in run/curriculum.json."""
    (run / "curriculum.json").unlink(missing_ok=True)
    service = subprocess.Popen([str(Path(sys.executable).parent / "spadegym"), "curriculum", "--config", str(CONFIG),
                                "--out", str(run)], start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (run / "curriculum.json").is_file():
        assert service.poll() is None and time.monotonic() < deadline, service.communicate()[1][-2000:]
        time.sleep(0.2)
    return service


def evaluate(run: Path, out: Path, server: FakeOpenAIServer) -> subprocess.CompletedProcess:
    """verifiers' eval command of PYTHON's install (0.3: ``eval``, in-process; 0.4: ``vf-eval``): 4 tickets x 2."""
    bin_dir = Path(PYTHON).parent
    classic = (bin_dir / "eval").exists()
    done = subprocess.run(
        [str(bin_dir / ("eval" if classic else "vf-eval")), "spadegym-verifiers", "--env.taskset.curriculum", str(run),
         "--env.taskset.tasks", "4", "--num-rollouts", "2", "--model", "fake-model", "--client.base-url", server.url,
         "--client.api-key-var", "SPADEGYM_TEST_KEY", "--no-rich", "--no-push", "--output-dir", str(out),
         *(["--no-serve"] if classic else [])],
        env={**os.environ, "SPADEGYM_TEST_KEY": "local"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_verifiers_eval_plays_curriculum_draws_and_the_service_resumes_after_a_kill(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with FakeOpenAIServer(first_action) as server:
        service = serve(run)
        evaluate(run, tmp_path / "out1", server)
        os.killpg(service.pid, signal.SIGKILL)  # killed, not stopped: the store keeps only committed rounds
        service.communicate()
        with RunStore.open(run) as store:
            assert store.last_complete_round() == 0

        service = serve(run)  # the same command resumes the run
        evaluate(run, tmp_path / "out2", server)
        os.killpg(service.pid, signal.SIGTERM)
        stdout, stderr = service.communicate(timeout=120)
    counts = json.loads(stdout.strip().splitlines()[-1])
    # No play's feedback lost or counted twice (the resumed service's own count).
    assert counts["drawn"] == counts["reported"] == PLAYS_PER_ROUND and counts["duplicates"] == 0, stderr[-2000:]

    with RunStore.open(run) as store:
        assert [r["round"] for r in store.rounds()] == [0, 1]
        episodes = store.episodes(split="train")
    refs = [e["trace_ref"] for e in episodes]
    assert len(set(refs)) == len(refs) and all(r.startswith("verifiers ") for r in refs)
    assert [sum(e["round"] == n for e in episodes) for n in (0, 1)] == [PLAYS_PER_ROUND] * 2
    # The designer's new levels of the resumed round were played; both arms were.
    assert any(e["env_id"].startswith("r001-") for e in episodes if e["round"] == 1)
    assert {e["hinted"] for e in episodes} == {False, True}
    # What verifiers recorded: each rollout's draw, the hint arm weighted 0 (it never trains).
    records = [json.loads(line) for line in next((tmp_path / "out2").glob("*/traces.jsonl")).read_text().splitlines()]
    traces = [trace for record in records for trace in record["traces"]]
    assert len(traces) == PLAYS_PER_ROUND
    assert {t["info"]["round"] for t in traces} == {1}
    for trace in traces:
        assert trace["rewards"]["return"]["weight"] == (0.0 if trace["info"]["hinted"] else 1.0)
