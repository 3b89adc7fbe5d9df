"""Long work shows progress: a phase that finishes nothing for a while (a designer writing, a model
generating) still prints a progress line every ``SPADEGYM_PROGRESS_EVERY`` seconds (30 by default)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SLOW_DESIGNER = textwrap.dedent('''\
    import asyncio

    from spadegym.designers.mutation import MutationDesigner


    class SlowDesigner(MutationDesigner):
        """The mutation designer, thinking for a second and a half over every skill's proposals."""

        async def propose(self, context):
            await asyncio.sleep(1.5)
            return await super().propose(context)
''')

SMALL = ["--rounds", "1", "--set", "envs_per_round=2", "--set", "plays=2", "--set", "hint_plays=0",
         "--set", "group_size=2", "--set", "skills_per_round=1", "--set", "heldout.every=0",
         "--set", "heldout.levels=easiest", "--set", "heldout.seeds=1", "--set", 'heldout.families=["take_away"]',
         "--set", "tensorboard=false", "--no-report"]


def test_a_designer_that_writes_for_a_while_prints_progress_lines_meanwhile(tmp_path):
    (tmp_path / "slowparts").mkdir()
    (tmp_path / "slowparts" / "designer.py").write_text(SLOW_DESIGNER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SPADEGYM_PROGRESS_EVERY": "0.3"}
    done = subprocess.run([sys.executable, "-m", "spadegym", "run", "--designer", "slowparts.designer:SlowDesigner",
                           "--out", str(tmp_path / "run"), *SMALL], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    # The lines while it writes (the phase's closing "2/2" line may or may not land on stdout before the next).
    lines = [line for line in done.stdout.splitlines() if line.startswith("round 0 design:") and " 2/2 " not in line]
    # Several lines while the designer writes (1.5 s at 0.3 s apart), each saying which proposals are under way.
    assert len(lines) >= 2, done.stdout[-2000:]
    assert all(line.startswith("round 0 design: 0/2 proposals (proposals 1-2, skill ") for line in lines), lines
    assert "so far" in lines[-1]


def test_the_eta_follows_the_pace_after_the_first_units_not_their_start_up():
    from spadegym.loop.callbacks import PhaseProgress

    # 64 episodes run side by side: the first finishes after 4 s of start-up, the next 31 within the next second.
    first = PhaseProgress(0, "play", 1, 512, 0, 4.0, first=(4.0, 1))
    assert first.eta_s is None and "so far" in first.line()  # one point is no pace
    later = PhaseProgress(0, "play", 32, 512, 0, 5.0, first=(4.0, 1))
    assert later.eta_s is not None and abs(later.eta_s - 1.0 / 31 * 480) < 1e-9  # ~15 s, not 5 / 32 * 480 = 75 s
    assert "ETA 15s" in later.line(), later.line()
