"""A pool whose files list no actions, played by an agent that chooses among listed actions (issue 29.3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FREE_ANSWER = '''
class SumEnv:
    max_turns = 1

    def reset(self, seed=None):
        self.a, self.b = (seed or 0) % 50 + 10, (seed or 0) % 37 + 11
        return f"What is {self.a} + {self.b}? Answer in \\\\boxed{{}}.", {}

    def step(self, action):
        won = action.strip() == str(self.a + self.b)
        return ("right" if won else "wrong"), float(won), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
'''


def test_run_pool_with_the_learner_on_files_without_actions_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "sums.py").write_text(FREE_ANSWER)
    done = subprocess.run([sys.executable, "-m", "spadegym", "run", "--pool", str(tmp_path / "pool"), "--rounds", "1",
                           "--out", str(tmp_path / "run"), "--no-report", "--set", "tensorboard=false",
                           "--set", "heldout.every=0"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith("error: agent 'learner' chooses among valid actions") and "valid_actions()" in line
    assert not (tmp_path / "run").exists()  # nothing committed, nothing kept
