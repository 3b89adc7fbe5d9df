"""``benchmarks/bfcl.py`` scores an ``openai:`` agent with BFCL's own data and checkers, end to end.

The agent is the project's fake OpenAI server, answering each BFCL entry from BFCL's own ground truth
(native ``tool_calls``; plain text for irrelevance; in multi-turn, the turn's calls, then text once the
tool results are back) or never calling a tool: BFCL's checkers must pass the first on every entry and
the second only on irrelevance. The benchmark runs in its own virtual environment (``.venv-bfcl``, or the
Python that ``$SPADEGYM_BFCL_PYTHON`` names); without one the test is skipped (benchmarks/README.md says
how to make it).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "bfcl.py"
PYTHON = Path(os.environ.get("SPADEGYM_BFCL_PYTHON") or ROOT / ".venv-bfcl" / "bin" / "python")
CATEGORIES = ["simple_python", "multiple", "parallel", "irrelevance", "multi_turn_base"]
LIMIT = 3


def _data_dir() -> Path | None:
    if not PYTHON.exists():
        return None
    found = subprocess.run([str(PYTHON), "-c", "import bfcl_eval, os; print(os.path.dirname(bfcl_eval.__file__))"],
                           capture_output=True, text=True, timeout=120)
    return Path(found.stdout.strip()) / "data" if found.returncode == 0 else None


DATA = _data_dir()
pytestmark = pytest.mark.skipif(DATA is None, reason=f"no Python with bfcl-eval at {PYTHON} (the BFCL venv; "
                                "benchmarks/README.md: python3 -m venv .venv-bfcl and two pip lines)")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _first_value(choices: list) -> object:
    return next(choice for choice in choices if choice != "")


def _single_calls(ground_truth: list[dict]) -> list[dict]:
    """BFCL's accepted answers -> one call per expected function (its name as BFCL lists it), each argument its
    first accepted value."""
    calls = []
    for call in ground_truth:
        (name, params), = call.items()
        arguments = {key: _first_value(choices) for key, choices in params.items() if any(c != "" for c in choices)}
        calls.append({"name": name, "arguments": arguments})
    return calls


def _multi_turn_calls(turn: list[str], tools: list[dict]) -> list[dict]:
    """One multi-turn ground-truth turn (``cd(folder='document')``, ``sort('report.pdf')``) -> tool calls,
    positional arguments named in the order the tool's schema lists its parameters."""
    order = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"]) for tool in tools}
    calls = []
    for text in turn:
        node = ast.parse(text, mode="eval").body
        arguments = {name: ast.literal_eval(arg) for name, arg in zip(order[node.func.id], node.args)}
        arguments |= {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        calls.append({"name": node.func.id, "arguments": arguments})
    return calls


def _answers() -> dict[str, object]:
    """First user message of each entry the run asks -> its ground truth ("irrelevance": no call)."""
    answers: dict[str, object] = {}
    for category in CATEGORIES:
        entries = _lines(DATA / f"BFCL_v4_{category}.json")[:LIMIT]
        truth = ({} if category == "irrelevance" else
                 {e["id"]: e["ground_truth"] for e in _lines(DATA / "possible_answer" / f"BFCL_v4_{category}.json")})
        for entry in entries:
            first = next(m["content"] for m in entry["question"][0] if m["role"] == "user")
            answers[first] = truth.get(entry["id"], "irrelevance")
    return answers


def _oracle(answers: dict[str, object]):
    def reply(body: dict, _index: int) -> FakeReply:
        messages = body["messages"]
        users = [m for m in messages if m.get("role") == "user"]
        truth = answers[users[0]["content"]]
        if truth == "irrelevance":
            return FakeReply(content="None of these functions fits the question.")
        if isinstance(truth[0], dict) and not body.get("tools"):  # BFCL's prompting format: calls as Python
            calls = [f"{call['name']}(" + ", ".join(f"{key}={value!r}" for key, value in call["arguments"].items())
                     + ")" for call in _single_calls(truth)]
            return FakeReply(content="[" + ", ".join(calls) + "]")
        if isinstance(truth[0], dict):  # single turn, native tool calls: a tool's name has no dot (BFCL sends '_')
            return FakeReply(tool_calls=[{**call, "name": call["name"].replace(".", "_")} for call in _single_calls(truth)])
        if messages[-1].get("role") == "tool":  # the turn's calls are done: end the turn
            return FakeReply(content="Done.")
        return FakeReply(tool_calls=_multi_turn_calls(truth[len(users) - 1], body["tools"]))
    return reply


def _run(server: FakeOpenAIServer, *extra: str) -> list[dict]:
    out = subprocess.run([str(PYTHON), str(BENCHMARK), "--categories", ",".join(CATEGORIES), "--limit", str(LIMIT),
                          "--workers", "2", "--json", *extra], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_bfcl_checkers_pass_every_right_answer_and_fail_no_call_but_on_irrelevance(tmp_path: Path) -> None:
    # Both agents in one invocation (BFCL's import is most of a run's CPU): one server, the model name picks the reply.
    oracle = _oracle(_answers())
    silent = FakeReply(content="I would rather not call anything.")
    with FakeOpenAIServer(lambda body, i: oracle(body, i) if body["model"] == "oracle" else silent) as server:
        right, refused = _run(server, "--agent", f"openai:oracle@{server.url}", "--agent",
                              f"openai:silent@{server.url}", "--failures", str(tmp_path / "failures.jsonl"))
        asked = [r for r in server.requests if r["model"] == "oracle"]
    assert right["agent"] == f"openai:oracle@{server.url}" and right["model"] == "oracle"
    assert right["score_by_category"] == dict.fromkeys(CATEGORIES, 1.0), right
    assert right["entries_by_category"] == dict.fromkeys(CATEGORIES, LIMIT)
    assert right["score"] == 1.0 and right["errors"] == 0 and right["checker"].startswith("bfcl-eval ")
    single = next(r for r in asked if r["messages"][0]["role"] == "user" and r.get("tools"))
    assert all(tool["type"] == "function" and "." not in tool["function"]["name"] for tool in single["tools"])

    assert refused["model"] == "silent"
    assert refused["score_by_category"] == {**dict.fromkeys(CATEGORIES, 0.0), "irrelevance": 1.0}, refused
    assert refused["score"] == 0.2
    # Every failed entry is the silent agent's, each named with its category.
    failed = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert sorted((f["agent"], f["category"]) for f in failed) == sorted(
        (refused["agent"], category) for category in CATEGORIES if category != "irrelevance" for _ in range(LIMIT))


def test_bfcl_prompting_format_reads_calls_written_as_python() -> None:
    with FakeOpenAIServer(_oracle(_answers())) as server:
        out = subprocess.run([str(PYTHON), str(BENCHMARK), "--agent", f"openai:fake-model@{server.url}", "--mode",
                              "prompt", "--categories", "simple,irrelevance", "--limit", str(LIMIT), "--max-tokens", "64",
                              "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT)
        asked = server.requests
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["score_by_category"] == {"simple_python": 1.0,
                                                                                      "irrelevance": 1.0}
    assert all(not request.get("tools") and request["max_tokens"] == 64 for request in asked)


def test_bfcl_refuses_an_agent_that_is_not_served_and_an_unknown_category() -> None:
    for argv, said in ((["--agent", "random"], "openai:MODEL"),
                       (["--agent", "openai:m@http://127.0.0.1:9/v1", "--categories", "web_search_base"],
                        "not an offline BFCL category"),
                       (["--agent", "openai:m@http://127.0.0.1:9/v1", "--agent", "random"], "openai:MODEL")):
        out = subprocess.run([str(PYTHON), str(BENCHMARK), *argv, "--json"], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
        assert out.returncode != 0 and said in out.stderr, out.stderr[-2000:]
