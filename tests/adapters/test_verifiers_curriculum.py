"""verifiers, from its own eval command, plays the live curriculum `spadegym curriculum` serves (the docs'
example, examples/verifiers_curriculum.sh); the service resumes the run, and starts again after a SIGKILL.

One test for the whole contract (each verifiers command imports for a long while). It runs verifiers 0.4 when
the side environment scripts/setup-tests makes is there (SPADEGYM_VERIFIERS_04_PYTHON), else this venv's line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Found, not imported (every xdist worker collects this module; verifiers' commands import it themselves).
if not os.environ.get("SPADEGYM_VERIFIERS_04_PYTHON") and importlib.util.find_spec("verifiers") is None:
    pytest.skip("the verifiers extra is not installed", allow_module_level=True)

from spadegym.adapters.curriculum_client import CurriculumClient  # noqa: E402
from spadegym.store import RunStore  # noqa: E402
from spadegym_testing.fake_server import FakeOpenAIServer  # noqa: E402

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


def serve(run: Path, bin_dir: Path) -> subprocess.Popen:
    """`spadegym curriculum` for ``run``, once it has named itself in run/curriculum.json."""
    (run / "curriculum.json").unlink(missing_ok=True)
    service = subprocess.Popen(
        [str(bin_dir / "spadegym"), "curriculum", "--config", str(CONFIG), "--out", str(run)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (run / "curriculum.json").is_file():
        assert service.poll() is None and time.monotonic() < deadline, service.communicate()[1][-2000:]
        time.sleep(0.2)
    return service


def test_verifiers_eval_plays_curriculum_draws_and_the_service_resumes(tmp_path: Path) -> None:
    bin_dir = Path(PYTHON).parent
    # verifiers 0.3: its v1 command is `eval`, in-process with --no-serve.
    classic = (bin_dir / "eval").exists()
    env = {**os.environ, "OPENAI_API_KEY": "local", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "runs" / "vf-curriculum"
    with FakeOpenAIServer(first_action) as server:
        # The docs' example as a user runs it: the service in the background, verifiers' eval against it.
        code = (ROOT / "examples" / "verifiers_curriculum.sh").read_text()
        code = code.replace("MODEL", "fake-model").replace("http://127.0.0.1:8000/v1", server.url)
        code = code.replace("--no-push", "--no-push --output-dir out1")
        if classic:
            code = code.replace("vf-eval", "env eval").replace("--no-push", "--no-push --no-serve")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # The service stopped with the script; it printed what it counted. No feedback lost or counted twice.
        counts = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
        assert counts["drawn"] == counts["reported"] == PLAYS_PER_ROUND and counts["duplicates"] == 0
        assert counts["rounds_closed"] == 1

        # The same command resumes the run: the next round's draws.
        service = serve(run, bin_dir)
        command = "\n" + ("env eval" if classic else "vf-eval")
        evaluate = code[code.index(command) + 1 :].replace("out1", "out2")  # the script's eval line, again
        second = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", evaluate],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert second.returncode == 0, second.stderr[-3000:]
        os.killpg(service.pid, signal.SIGKILL)  # killed: the store keeps its committed rounds
        service.communicate()
    service = serve(run, bin_dir)  # and starts again on them
    client = CurriculumClient.at(run)
    assert client.status()["next_round"] == 2
    os.killpg(service.pid, signal.SIGTERM)
    service.communicate(timeout=120)

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
    records = [
        json.loads(line) for line in next((tmp_path / "out2").glob("*/traces.jsonl")).read_text().splitlines()
    ]
    traces = [trace for record in records for trace in record["traces"]]
    assert len(traces) == PLAYS_PER_ROUND
    assert {t["info"]["round"] for t in traces} == {1}
    for trace in traces:
        assert trace["rewards"]["return"]["weight"] == (0.0 if trace["info"]["hinted"] else 1.0)
