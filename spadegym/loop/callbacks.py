"""What a run shows as it goes, attached as callbacks (TRL's ``TrainerCallback`` idea): ``run()`` prints nothing.

    class Notify(RunCallback):
        def on_round(self, summary): send(f"round {summary.round}: win {summary.win_rate}")

    run(config, "runs/x", callbacks=[Notify()])

The CLI attaches ``ConsoleCallback`` (the round line and a progress bar); a run
whose config asks for TensorBoard attaches ``TensorBoardCallback``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..store.record import RoundSummary
from .heldout import SHORT_NAMES
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


#: Seconds between progress lines off a terminal (a log file, a job scheduler); tests set it small.
PROGRESS_EVERY_ENV = "SPADEGYM_PROGRESS_EVERY"


def progress_every() -> float:
    """Seconds between progress lines: 30, or what ``SPADEGYM_PROGRESS_EVERY`` says."""
    try:
        return max(0.05, float(os.environ.get(PROGRESS_EVERY_ENV) or 30.0))
    except ValueError:
        return 30.0


@dataclass
class PhaseProgress:
    """How far one phase of a round has come: its episodes (``play``, ``heldout``), proposals (``design``),
    levels (``validate``) or training steps (``learn``)."""

    round: int
    phase: str
    done: int  # units finished
    total: int
    tokens: int  # tokens the models wrote in this phase so far (0 for agents and designers that count none)
    seconds: float  # since the phase began
    unit: str = "episodes"
    detail: str = ""  # what is under way now (the proposal a designer writes)
    first: tuple[float, int] | None = None  # (seconds, units done) when the first units finished


    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace since the first units finished (None until more have): the first ones also
        carry the phase's start-up (workers, a model's first batch), and units run side by side."""
        if self.first is None or self.done <= self.first[1] or self.seconds <= self.first[0]:
            return None
        return (self.seconds - self.first[0]) / (self.done - self.first[1]) * (self.total - self.done)

    def line(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        tokens = f", {self.tokens:,} tokens ({self.tokens_per_s:.1f}/s)" if self.tokens else ""
        when = f", {_duration(self.seconds)} so far" if self.eta_s is None else f", ETA {_duration(self.eta_s)}"
        if self.done == self.total:
            when = f", {_duration(self.seconds)}"
        return f"round {self.round} {self.phase}: {self.done}/{self.total} {self.unit}{detail}{tokens}{when}"


class ProgressMeter:
    """Turns a phase's finished units (the runner's ``on_episode``, or ``advance``) into ``PhaseProgress`` reports.

    ``live_tokens`` reads the tokens this process's models have sampled so far, finished generations or not,
    so that a report during one long generation shows its pace.
    """

    def __init__(self, report: Callable[[PhaseProgress], None], round: int, phase: str, total: int,
                 unit: str = "episodes", live_tokens: Callable[[], int] | None = None):
        self.report, self.round, self.phase, self.total, self.unit = report, round, phase, total, unit
        self.done = self.tokens = 0
        self.detail = ""
        self.live_tokens = live_tokens
        self._live_start = live_tokens() if live_tokens is not None else 0
        self.started = time.perf_counter()
        self.first: tuple[float, int] | None = None
        self.last_report = self.started
        self._lock = threading.Lock()  # a heartbeat reports from its own thread

    def __call__(self, episode: Any) -> None:
        """An episode finished."""
        self._finished(1)
        self.tokens += int(episode.tokens.get("completion", 0))
        self.tick()

    def advance(self, count: int = 1, detail: str | None = None, report: bool = False) -> None:
        """``count`` more units finished; ``detail`` says what is under way now."""
        self._finished(count)
        if detail is not None:
            self.detail = detail
        if report:
            self.tick()

    def _finished(self, count: int) -> None:
        self.done += count
        if self.first is None and self.done:
            self.first = (time.perf_counter() - self.started, self.done)

    def snapshot(self) -> PhaseProgress:
        live = self.live_tokens() - self._live_start if self.live_tokens is not None else 0
        return PhaseProgress(self.round, self.phase, self.done, self.total, max(self.tokens, live),
                             time.perf_counter() - self.started, self.unit, self.detail, self.first)

    def tick(self) -> None:
        with self._lock:
            self.last_report = time.perf_counter()
            self.report(self.snapshot())


class Heartbeat:
    """Reports a phase's progress whenever it has reported nothing for ``every`` seconds, from a thread: one
    long generation or a validation finishes nothing for minutes, and a run must still show that it works."""

    def __init__(self, meter: ProgressMeter | None, every: float):
        self.meter, self.every = meter, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressMeter | None:
        if self.meter is not None:
            self._thread = threading.Thread(target=self._beat, name="spadegym-progress", daemon=True)
            self._thread.start()
        return self.meter

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        meter = self.meter
        assert meter is not None
        while not self._stop.wait(self.every / 4):
            if time.perf_counter() - meter.last_report >= self.every:
                meter.tick()


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class RunCallback:
    """Hooks a run calls in order: ``on_start``, ``on_round`` per committed round, ``on_note``, ``on_end``;
    ``on_progress`` as the episodes of a round finish.

    Every hook does nothing here; override the ones you need.
    """

    def on_start(self, start: RunStart) -> None:
        """The run's parts are built; no round has been played yet."""

    def on_round(self, summary: RoundSummary) -> None:
        """A round is committed to the store (so nothing shown ever runs ahead of the store)."""

    def on_progress(self, progress: PhaseProgress) -> None:
        """An episode of the round's plays or of its held-out evaluation finished."""

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
    """The run's header, one line per round, progress bars and the notices, on a rich console.

    Within a round, the episodes played so far: a second bar in a terminal; elsewhere (a log file,
    a pipe) a line every ``log_every`` seconds and when a phase ends.
    """

    def __init__(self, console: Console | None = None, log_every: float | None = None) -> None:
        self.console = console or Console()
        self.progress: Progress | None = None
        self.task: Any = None
        self.phase: Any = None  # the bar of the round's current phase
        self.phase_key: tuple[int, str] | None = None
        self.log_every = progress_every() if log_every is None else log_every
        self._logged = 0.0

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
        self._drop_phase()
        self._print(summary_line(summary))
        if self.progress is not None:
            self.progress.update(self.task, advance=1)

    def on_progress(self, p: PhaseProgress) -> None:
        if not self.console.is_terminal:
            now = time.monotonic()
            if p.done == p.total or now - self._logged >= self.log_every:
                self._logged = now
                self._print(p.line())
            return
        if self.progress is None:
            return
        if self.phase_key != (p.round, p.phase):
            self._drop_phase()
            self.phase = self.progress.add_task("", total=p.total)
            self.phase_key = (p.round, p.phase)
        self.progress.update(self.phase, completed=p.done, description=p.line())

    def _drop_phase(self) -> None:
        if self.progress is not None and self.phase is not None:
            self.progress.remove_task(self.phase)
        self.phase, self.phase_key = None, None

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
    others = list((s.heldout.get("heldout_by_suite") or {}).items())[1:]  # the first suite is the figure above
    if others:
        held += " (" + " ".join(f"{SHORT_NAMES.get(name, name)} {value:.2f}" for name, value in others) + ")"
    pool = s.diversity.get("pool", s.diversity.get("pool_code"))  # a level's identity: its code and its play
    div = "" if pool is None else f"  diversity {pool:.2f}" + (" (pool collapsed)" if s.diversity.get("collapsed") else "")
    return (f"round {s.round:>3}  valid {s.valid}/{s.proposals}  played {s.played} "
            f"(replay {s.replayed})  win {f(s.win_rate)}  hint {f(s.win_rate_hint)}  "
            f"return {f(s.return_mean)}/{f(s.return_mean_hint)}  "
            f"regret {f(s.regret_mean, '+.2f')}  band {f(s.band_fraction)}  "
            f"difficulty {f(s.difficulty_mean)}{held}{div}{_training(s)}  {s.seconds:.1f}s")


def _training(s: RoundSummary) -> str:
    """The model-training part of a round line: each role's KL, and what the reward-hacking watch flags."""
    parts = [f"{role} kl {s.learner[f'{role}_kl_sampling']:.4f}" for role in ("agent", "designer")
             if isinstance(s.learner.get(f"{role}_kl_sampling"), (int, float))]
    if s.designer_watch.get("flag"):
        parts.append(f"REWARD-HACKING WATCH: {', '.join(s.designer_watch.get('kinds') or ['trend'])}")
    return ("  " + "  ".join(parts)) if parts else ""
