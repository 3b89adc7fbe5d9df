"""What a run shows as it goes, attached as callbacks (TRL's ``TrainerCallback`` idea): ``run()`` prints nothing.

    class Notify(RunCallback):
        def on_round(self, summary): send(f"round {summary.round}: win {summary.win_rate}")

    run(config, "runs/x", callbacks=[Notify()])

The CLI attaches ``ConsoleCallback`` (the round line and a progress bar); a run
whose config asks for TensorBoard attaches ``TensorBoardCallback``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..store.record import RoundSummary
from .tensorboard import ScalarBoard


@dataclass
class RunStart:
    """What a starting (or resumed) run is about."""

    run_dir: Path
    where: str  # where work runs (the executor, the sandbox tier)
    designer: str
    agent: str
    designer_reward: str
    first_round: int  # the round it starts with (0, or where a resumed run stopped)
    rounds: int  # the total it runs to


class RunCallback:
    """Hooks a run calls in order: ``on_start``, ``on_round`` per committed round, ``on_note``, ``on_end``.

    Every hook does nothing here; override the ones you need.
    """

    def on_start(self, start: RunStart) -> None:
        """The run's parts are built; no round has been played yet."""

    def on_round(self, summary: RoundSummary) -> None:
        """A round is committed to the store (so nothing shown ever runs ahead of the store)."""

    def on_note(self, message: str) -> None:
        """A one-line notice: where the run and its report are, a time limit, an interruption."""

    def on_end(self) -> None:
        """The run stopped (finished, interrupted or failed); release what ``on_start`` took."""


class TensorBoardCallback(RunCallback):
    """Round scalars under ``<run dir>/tensorboard/`` (skipped without the tensorboard package)."""

    def __init__(self) -> None:
        self.board = ScalarBoard(None)

    def on_start(self, start: RunStart) -> None:
        self.board = ScalarBoard(start.run_dir)

    def on_round(self, summary: RoundSummary) -> None:
        self.board.add(summary.to_dict())

    def on_end(self) -> None:
        self.board.close()


class ConsoleCallback(RunCallback):
    """The run's header, one line per round, a progress bar and the notices, on a rich console."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.progress: Progress | None = None
        self.task: Any = None

    def _print(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def on_start(self, start: RunStart) -> None:
        self._print(f"[bold]spadegym run[/] → {start.run_dir}  ({start.where}, designer: {start.designer}, "
                    f"agent: {start.agent}, reward: {start.designer_reward})")
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        self.progress = Progress(*columns, console=self.console, transient=True)
        self.task = self.progress.add_task("self-play rounds", total=start.rounds, completed=start.first_round)
        self.progress.start()

    def on_round(self, summary: RoundSummary) -> None:
        self._print(summary_line(summary))
        if self.progress is not None:
            self.progress.update(self.task, advance=1)

    def on_note(self, message: str) -> None:
        self._print(message)

    def on_end(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def summary_line(s: RoundSummary) -> str:
    """One line per round: what the designer made, how the agent did, what the curriculum holds."""
    def f(value: float | None, fmt: str = ".2f") -> str:
        return "  -  " if value is None else format(value, fmt)

    held = f"  heldout {s.heldout['heldout_success']:.2f}/{f(s.heldout.get('heldout_success_hint'))}" \
        if "heldout_success" in s.heldout else ""
    pool = s.diversity.get("pool_code")
    div = "" if pool is None else f"  diversity {pool:.2f}" + (" (pool collapsed)" if s.diversity.get("collapsed") else "")
    return (f"round {s.round:>3}  valid {s.valid}/{s.proposals}  played {s.played} "
            f"(replay {s.replayed})  win {f(s.win_rate)}  hint {f(s.win_rate_hint)}  "
            f"return {f(s.return_mean)}/{f(s.return_mean_hint)}  "
            f"regret {f(s.regret_mean, '+.2f')}  band {f(s.band_fraction)}  "
            f"difficulty {f(s.difficulty_mean)}{held}{div}{_training(s)}  {s.seconds:.1f}s")


def _training(s: RoundSummary) -> str:
    """The model-training part of a round line: each role's KL, and the reward-hacking flag."""
    parts = [f"{role} kl {s.learner[f'{role}_kl_sampling']:.4f}" for role in ("agent", "designer")
             if isinstance(s.learner.get(f"{role}_kl_sampling"), (int, float))]
    if s.designer_watch.get("flag"):
        parts.append("REWARD-HACKING FLAG (designer reward up, held-out success and diversity down)")
    return ("  " + "  ".join(parts)) if parts else ""
