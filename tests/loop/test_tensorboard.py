"""TensorBoard scalars of a real tiny run, read back with TensorBoard's own event reader."""

from __future__ import annotations

import os

import pytest
from rich.console import Console

from spadegym.loop import RunConfig, run
from spadegym.loop.tensorboard import summary_scalars
from spadegym.store import RunStore

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

# Held out: two families' ends (in_distribution alone), enough for the heldout scalars; the suites have their own tests.
DEFAULTS = {"envs_per_round": 2, "plays": 2, "hint_plays": 2, "group_size": 2, "skills_per_round": 2,
            "heldout": {"every": 0, "levels": "ends", "seeds": 1, "families": ["take_away", "code_breaker"]}}
TINY = {**DEFAULTS, "report_to": ["tensorboard"]}


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"))  # noqa: SIM115


def scalars(logdir) -> EventAccumulator:
    acc = EventAccumulator(str(logdir))  # reads every event file in the folder, in name order
    acc.Reload()
    return acc


def test_rounds_become_scalars_and_resume_continues_the_steps(tmp_path):
    out = tmp_path / "run"
    run(RunConfig(rounds=2, **TINY), out, console=quiet(), report=False)
    run(resume=out, rounds=3, console=quiet(), report=False)  # a second event file, same folder

    logdir = out / "tensorboard"
    assert len(list(logdir.glob("events.out.tfevents.*"))) == 2
    acc = scalars(logdir)
    tags = set(acc.Tags()["scalars"])
    for tag in ("agent/win_rate", "agent/win_rate_hint", "agent/return_mean", "agent/regret_mean", "designer/valid",
                "designer/designer_reward_mean", "curriculum/buffer_size", "buffer/size", "buffer/retired", "timing/play",
                "timing/seconds", "heldout/success"):
        assert tag in tags, sorted(tags)
    assert [e.step for e in acc.Scalars("agent/win_rate")] == [0, 1, 2]
    # heldout.every=0: only the last round of each invocation (1, then 2 after the resume) is evaluated.
    assert [e.step for e in acc.Scalars("heldout/success")] == [1, 2]

    with RunStore.open(out) as store:
        stored = store.rounds()
    assert set(summary_scalars(stored[1])) <= tags
    for tag in ("agent/win_rate", "designer/valid", "buffer/size", "timing/play"):
        section, key = tag.split("/")
        expected = {"agent": stored[1], "designer": stored[1], "buffer": stored[1]["buffer"],
                    "timing": stored[1]["timings"]}[section][key]
        assert acc.Scalars(tag)[1].value == pytest.approx(expected, rel=1e-6)  # float32 in the event file
    assert [e.value for e in acc.Scalars("heldout/success")] == pytest.approx(
        [stored[1]["heldout_success"], stored[2]["heldout_success"]], rel=1e-6)


def test_switched_off_writes_no_event_file(tmp_path):
    out = tmp_path / "off"
    result = run(RunConfig(rounds=1, tensorboard=False, **TINY), out, console=quiet(), report=False)
    assert result.rounds == 1
    assert not (out / "tensorboard").exists()


def test_summary_scalars_flatten_nested_numbers_and_skip_the_rest():
    tags = summary_scalars({"round": 4, "win_rate": 0.5, "regret_mean": None, "refusals": {"timeout": 2},
                            "learner": {"loss": 1.25, "note": "x"}, "heldout_success_hint": 0.75,
                            "something_new": 3, "label": "text"})
    assert tags == {"agent/win_rate": 0.5, "refusals/timeout": 2.0, "learner/loss": 1.25,
                    "heldout/success_hint": 0.75, "round/something_new": 3.0}


def test_the_default_run_needs_only_the_default_install(tmp_path):
    """A Python where `import tensorboard` fails (as in the quick start's install): no tracker is asked for by
    default, so the run goes on without a note and writes no board."""
    import subprocess
    import sys

    out = tmp_path / "plain"
    code = ("import sys; sys.modules['tensorboard'] = None\n"  # None in sys.modules makes the import fail
            "from rich.console import Console\nfrom spadegym.loop import RunConfig, run\n"
            f"run(RunConfig(rounds=1, **{DEFAULTS!r}), {str(out)!r}, report=False, console=Console())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "round   0" in proc.stdout and "report_to" not in proc.stdout + proc.stderr
    assert (out / "run.sqlite").exists() and not (out / "tensorboard").exists()



def test_a_resume_with_nothing_to_play_builds_nothing_and_writes_no_event_file(tmp_path):
    from spadegym.loop import RunCallback

    out = tmp_path / "run"
    run(RunConfig(rounds=1, **TINY), out, console=quiet(), report=False)
    files = sorted(p.name for p in out.rglob("*"))

    class Seen(RunCallback):
        def __init__(self) -> None:
            self.calls: list[str] = []

        def on_start(self, start) -> None:
            self.calls.append("start")

        def on_note(self, message: str) -> None:
            self.calls.append(message)

    seen = Seen()
    result = run(resume=out, callbacks=[seen], console=quiet(), report=True)
    assert result.rounds == 1 and result.summaries == [] and result.report is None
    assert seen.calls == ["The run already has 1 rounds; pass --rounds N (> 1) to extend it."]  # no parts built
    assert sorted(p.name for p in out.rglob("*")) == files  # no event file, no report, nothing new
