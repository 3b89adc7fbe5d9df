"""`spadegym design` through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spadegym.cli.design_cmd import parse_skills
from spadegym.errors import UserError
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply


def run_design(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", "design", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_mutation_designer_pool(tmp_path: Path) -> None:
    out = tmp_path / "pool"
    done = run_design("--count", "4", "--skills", "math,spatial", "--seed", "1", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["proposals"] == 4 and summary["designer"] == "mutation"
    assert summary["valid"] + sum(summary["refused"].values()) == 4
    written = sorted(out.glob("*.py"))
    assert len(written) == summary["valid"] >= 1
    for path in written:
        record = json.loads(path.with_suffix(".json").read_text())
        assert record["verdict"]["valid"] and record["skill"] in ("Mathematical Reasoning", "Spatial Reasoning")
    assert json.loads((out / "summary.json").read_text())["proposals"] == 4


def test_text_summary_table(tmp_path: Path) -> None:
    done = run_design("--count", "1", "--skills", "Optimization", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "proposals" in done.stdout and "valid" in done.stdout


def test_unknown_designer_suggests_a_name(tmp_path: Path) -> None:
    done = run_design("--designer", "mutaton", "--out", str(tmp_path))
    assert done.returncode == 2
    assert "did you mean 'mutation'?" in done.stderr and "Traceback" not in done.stderr


def test_skills_option_accepts_prefixes_and_rejects_unknown_names() -> None:
    assert parse_skills("math, spatial reasoning") == ["Mathematical Reasoning", "Spatial Reasoning"]
    assert parse_skills(None) is None
    with pytest.raises(UserError, match="--skills: 'juggling' names no skill"):
        parse_skills("juggling")


def test_bad_corpus_names_file_and_line(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"text": "fine"}\n{"text": \n', encoding="utf-8")
    done = run_design("--designer", "openai:m@http://127.0.0.1:9/v1", "--corpus", str(corpus),
                      "--out", str(tmp_path / "pool"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "docs.jsonl line 2 is not valid JSON" in " ".join(done.stderr.split())


def test_server_refusing_the_model_is_one_clear_error(tmp_path: Path) -> None:
    with FakeOpenAIServer([FakeReply(status=404, content="model 'nope' not found")]) as server:
        done = run_design("--designer", f"openai:nope@{server.url}", "--count", "1", "--out", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert server.url in " ".join(done.stderr.split()) and "refused the request (404" in done.stderr
