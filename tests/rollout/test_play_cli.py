"""`spadegym play` through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spadegym.sandbox import Sandbox


def spadegym(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spadegym", *args], capture_output=True, text=True,
                          input=stdin, timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})


def test_scripted_solution_wins_and_json_has_the_shape(tmp_path: Path, sandbox: Sandbox,
                                                       fixtures_dir: Path) -> None:
    env = fixtures_dir / "envs" / "switch_lamp.py"
    handle = sandbox.open(env.read_text(), env.name)
    handle.reset(seed=3)
    solution = handle.call("solution").value
    handle.close()
    script = tmp_path / "solution.txt"
    script.write_text("# recorded solution\n" + "\n".join(solution) + "\n")
    done = spadegym("play", str(env), "--agent", f"scripted:{script}", "--seed", "3", "--episodes", "2", "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["seed"] for line in lines] == [3, 4]
    first = lines[0]
    assert {"seed", "hinted", "turns", "return", "terminated", "truncated", "failure"} <= set(first)
    assert first["return"] == 1.0 and first["terminated"] and first["failure"] is None
    assert [t["action"] for t in first["turns"]] == solution
    assert {"observation", "action", "reward"} <= set(first["turns"][0]) and not first["hinted"]


def test_text_transcript_summary_and_hint(fixtures_dir: Path) -> None:
    env = fixtures_dir / "envs" / "number_guess.py"
    done = spadegym("play", str(env), "--episodes", "2", "--hint", "try   six first", "--seed", "1")
    assert done.returncode == 0, done.stderr
    # random keeps no history: the hint line ends every observation it sees
    assert done.stdout.count("hint: try six first") == done.stdout.count("  action: ") >= 2
    assert "episode 2/2 · seed 2 · hint" in done.stdout
    assert "2 episodes · success" in done.stdout and "mean return" in done.stdout
    own = spadegym("play", str(env), "--hinted", "--json", "--max-turns", "2")
    first = json.loads(own.stdout)["turns"][0]["observation"]
    assert json.loads(own.stdout)["hinted"] and first.splitlines()[-1].startswith("hint: The secret number is")


def test_a_broken_file_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("class BrokenEnv:\n    def reset(self, seed=None):\n        return 'x', {}\n\nprint(1/0)\n")
    done = spadegym("play", str(bad))
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert "broken.py" in done.stderr and "ZeroDivisionError" in done.stderr
    missing = spadegym("play", str(tmp_path / "nope.py"))
    assert missing.returncode == 1 and "nope.py" in missing.stderr and "Traceback" not in missing.stderr


def test_agent_errors_are_user_errors(tmp_path: Path) -> None:
    env = tmp_path / "free.py"
    env.write_text("class FreeEnv:\n    def reset(self, seed=None):\n        return 'Say anything.', {}\n"
                   "    def step(self, action):\n        return 'ok', 1.0, True, False, {}\n")
    typo = spadegym("play", str(env), "--agent", "randon")
    assert typo.returncode == 2 and "did you mean 'random'" in typo.stderr
    choice = spadegym("play", str(env), "--agent", "learner")
    assert choice.returncode == 2 and "no valid_actions() method" in choice.stderr
    assert "Traceback" not in typo.stderr + choice.stderr


def test_human_plays_from_stdin_and_end_of_input_stops_cleanly(fixtures_dir: Path) -> None:
    env = fixtures_dir / "envs" / "number_guess.py"
    done = spadegym("play", str(env), "--agent", "human", "--json", stdin="6\n1\n")
    assert done.returncode == 0, done.stderr
    assert "input ended" in done.stderr and done.stdout == ""  # no episode finished; stdout stays JSON
    assert "1 1" in done.stderr and "action>" in done.stderr  # the numbered valid actions, on stderr


def test_an_openai_agent_plays_through_the_cli(fixtures_dir: Path) -> None:
    from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

    env = fixtures_dir / "envs" / "number_guess.py"
    replies = [FakeReply(content="\\boxed{6}", reasoning_content="middle first"), "\\boxed{3}", "no idea", "\\boxed{1}"]
    with FakeOpenAIServer(replies) as server:
        done = spadegym("play", str(env), "--agent", f"openai:fake-model@{server.url}", "--json")
        asked = len(server.requests)
    assert done.returncode == 0, done.stderr
    episode = json.loads(done.stdout)
    assert asked == 4 and [t["action"] for t in episode["turns"]] == ["6", "3", None, "1"]
    assert episode["format_failures"] == 1 and episode["tokens"]["completion_tokens"] > 0
    assert episode["turns"][0]["reply"].startswith("<think>middle first</think>")
