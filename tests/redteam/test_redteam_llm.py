"""Red-teaming with a model as the designer: written files are clustered by code and failure
pattern, and shrunk by "make it simpler, keep the failure" turns that the gate re-validates.

One local OpenAI-compatible server plays three parts, told apart by the request: the
designer model (writes a dial-arithmetic environment, a hint, and simpler versions when
asked), and the target, which always answers 0 (it fails almost every instance).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from spadegym.designers import prompts

DIAL = '''```python
import random

SKILL = "Mathematical Reasoning"
DESCRIPTION = "Where does a dial's hand stop after signed shifts that wrap around?"
DIFFICULTY = {{"shifts": {shifts}}}


class DialEnv:
    max_turns = 3

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.dial = rng.choice([13, 17, 19, 23])
        self.start = rng.randrange(1, self.dial)
        self.moves = [rng.randint(5, 40) * rng.choice([1, -1]) for _ in range({shifts})]
        self.target = (self.start + sum(self.moves)) % self.dial
        while self.target == 0:
            self.start += 1
            self.target = (self.start + sum(self.moves)) % self.dial
        moves = ", ".join(f"{{m:+d}}" for m in self.moves)
        return (f"A dial is numbered 0 to {{self.dial - 1}}. Its hand starts at {{self.start}} and moves by "
                f"{{moves}} (negative: backwards; it wraps around). Where does it stop? Reply \\\\boxed{{{{n}}}}."), {{}}

    def step(self, action):
        try:
            guess = int(str(action).strip())
        except ValueError:
            return "Reply with a whole number.", 0.0, False, False, {{}}
        if guess == self.target:
            return "Correct.", 1.0, True, False, {{}}
{padding}        return "Not there; check each shift.", 0.0, False, False, {{}}

    def valid_actions(self):
        return [str(n) for n in range(self.dial)]

    def solution(self):
        return [str(self.target)]
```'''
PADDING = "".join(f"        note_{i} = {i}  # bookkeeping the simpler version drops\n" for i in range(6))
ORIGINAL = DIAL.format(shifts=6, padding=PADDING)
BROKEN = "```python\nclass DialEnv:\n    def reset(self, seed=None):\n        return 'x', {}\n```"  # no step()
SIMPLER = DIAL.format(shifts=2, padding="")


SIMPLIFY = "agent under test fails it"  # the simplify turn's prompt says so


class Parts:
    """The server's script: the weak target, the designer's hint, simplify and design turns."""

    def __init__(self) -> None:
        self.simplify_turns = 0

    def __call__(self, request: dict[str, Any], index: int) -> str:
        messages = request["messages"]
        if request.get("model") == "weak":
            return "The hand stops at the start. \\boxed{0}"
        if messages[0]["content"] == prompts.HINT_SYSTEM:
            return "Add the shifts first, then take the remainder modulo the dial size."
        if SIMPLIFY in messages[-1]["content"]:
            self.simplify_turns += 1  # first a broken file (the gate must refuse it), then a smaller real one
            return BROKEN if self.simplify_turns == 1 else SIMPLER
        return f"Here is an arithmetic environment.\n\n{ORIGINAL}"


def test_an_llm_designer_hunt_shrinks_written_files_and_clusters_them_by_code(tmp_path: Path) -> None:
    from spadegym_testing.fake_server import FakeOpenAIServer

    script = Parts()
    out = tmp_path / "dial-suite"
    with FakeOpenAIServer(script) as server:
        done = subprocess.run(
            [sys.executable, "-m", "spadegym", "redteam", "--target", f"openai:weak@{server.url}",
             "--designer", f"openai:designer@{server.url}", "--skills", "Mathematical Reasoning", "--budget", "2",
             "--per-round", "2", "--set", "simplify_turns=3", "--out", str(out), "--json"],
            capture_output=True, text=True, timeout=240, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["cases"]) == 1  # the designer wrote the same file twice: one failure, one case
    case = manifest["cases"][0]
    assert case["family"] is None and case["cluster"].startswith("code:") and case["cluster"].endswith(":out_of_turns")
    # Shrunk by the repair turns: the broken version was refused by the gate, the smaller one kept.
    steps = case["shrink_steps"]
    assert [s.get("valid") for s in steps[:2]] == [False, True] and steps[1]["still_fails"] is True
    assert case["size"] < case["original_size"]
    minimal, original = (out / case["file"]).read_text(), (out / case["original_file"]).read_text()
    assert "range(2)" in minimal and "range(6)" in original and "note_0" not in minimal
    assert case["failure_rate"] >= 0.9 and case["solution_return"] == 1.0
    assert "import random" in minimal and script.simplify_turns == 3  # the third reply is not shorter: not kept
