"""`spadegym run`: start, resume or extend a self-play run in a run directory."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ..designers.base import Designer
from ..errors import Interrupted, Terminated, UserError
from ..executor import Executor, executor_validator, make_executor
from ..llm.client import LLMError
from ..outputs import holds_links
from ..store import RunStore, versions
from ..store.record import RoundSummary
from .agent import build_agent
from .callbacks import (  # noqa: F401 - summary_line: kept importable here
    ConsoleCallback,
    PhaseProgress,
    RunCallback,
    RunStart,
    TensorBoardCallback,
    summary_line,
)
from .config import RunConfig
from .cost import round_cost
from .safety import resumed_config
from .selfplay import SelfPlay
from .trackers import tracker_callbacks


@dataclass
class RunResult:
    run_dir: Path
    rounds: int
    summaries: list[RoundSummary]
    report: Path | None


@dataclass
class Footprint:
    """What a new run's directory held before the run (``before``), so that a run that fails to start can put it back.

    A run that stops before its first round is committed has nothing to resume:
    ``erase`` removes every path it created, the directory too and the parents
    it made (while empty), so a failed start leaves the disk as it found it.
    """

    run_dir: Path
    held: frozenset[Path] | None  # the paths under an existing run directory; None: the run makes it
    made: tuple[Path, ...] = ()  # the parents the run makes, deepest first

    @classmethod
    def before(cls, run_dir: Path) -> Footprint:
        if run_dir.is_dir():
            return cls(run_dir, frozenset(run_dir.rglob("*")))
        made = tuple(p for p in run_dir.absolute().parents if not p.exists())
        return cls(run_dir, None, made)

    def erase(self) -> None:
        """Remove what the run created (within an existing directory, deepest first)."""
        if self.held is None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            for parent in self.made:
                try:
                    parent.rmdir()
                except OSError:
                    return  # something else lives there now
            return
        for path in sorted(set(self.run_dir.rglob("*")) - self.held, key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def build_parts(config: RunConfig, store: RunStore, executor: Executor) -> SelfPlay:
    from ..designers.mixed import MixedDesigner
    from ..designers.pool import PoolDesigner, pool_files
    from ..designers.registry import DESIGNERS
    from ..designers.sources import source_parts

    # Each kind gets the sections of the config its registry says it reads (and nothing else); a designer that
    # validates as it writes (the LLM one) validates where the run does; hf: roles share one policy per model
    # path (same path = shared weights).
    shared = {"validator": executor_validator(executor, config.validation), "policies": _policies(config)}
    designer: Designer | None = None
    if config.designer.kind != "pool":
        kind = DESIGNERS.kind(config.designer)
        designer = DESIGNERS.make(config.designer, config.seed, **kind.from_config(config),
                                  **{k: v for k, v in shared.items() if v is not None and kind.takes(k)})
    if config.pool.path:  # the pool's files first: alone (designer 'pool'), or as the seed levels of the designer
        designer = PoolDesigner(pool_files(config.pool.path), then=designer)
    agent = build_agent(config.agent, seed=config.seed, config=config, offered=shared)
    if config.sources:  # the sources propose beside the designer, each by its share
        main_share, parts = source_parts(config.sources, seed=config.seed, skills=config.skills,
                                         mutation=config.mutation)
        for part in parts:
            if part.skills is not None and not part.skills & set(config.skills):
                raise UserError(f"source '{part.name}' trains {', '.join(sorted(part.skills))}, which is not among the "
                                "run's skills; add it to skills or drop the source.")
            if agent.needs_valid_actions and part.lists_actions is False:
                raise UserError(f"agent '{config.agent}' chooses among listed actions, and the levels of source "
                                f"'{part.name}' list none; play them with a text agent (random, openai:MODEL, hf:PATH).")
        designer = MixedDesigner(designer, parts, main_share)
    return SelfPlay(config, store, executor, designer, agent)  # parts that train restore their checkpoint there


def _policies(config: RunConfig) -> Any:
    if "hf" not in (config.agent.kind, config.designer.kind):
        return None
    from ..train import PolicyPool

    return PolicyPool(config.train, config.seed)


def run(config: RunConfig | None = None, out: str | Path | None = None, *, resume: str | Path | None = None,
        rounds: int | None = None, settings: dict[str, Any] | None = None, callbacks: Sequence[RunCallback] = (),
        console: Console | None = None, report: bool = True) -> RunResult:
    """Run (or resume) self-play; every round is committed to ``out/run.sqlite`` as it finishes.

    A resumed run replays the experiment stored in ``resume`` with the user's own safety settings: the defaults,
    then ``settings`` (a config file's settings and the command line's, as ``read_settings`` returns them; see
    ``loop.safety``), never the store's. It prints nothing itself: ``callbacks`` see the run as it goes, and
    ``console`` attaches the console line and progress bar (``ConsoleCallback``) as the CLI does.
    """
    footprint: Footprint | None = None  # a new run's, to erase if it fails to start
    changed: list[str] = []  # the safety settings in force that differ from the store's
    if resume is not None:
        if (link := holds_links(resume)) is not None:  # a run writes all over its folder: a planted link leads out
            raise UserError(f"{link} is a link inside the run directory {resume}; a resumed run writes there and never "
                            "through a link (it could lead anywhere), so remove it first.")
        store = RunStore.open(resume)
        try:
            given = {**(settings or {}), **({"rounds": rounds} if rounds is not None else {})}
            config, changed = resumed_config(store.config, given, resume)
        except UserError:
            store.close()
            raise
    else:
        config = config or RunConfig()
        run_dir = Path(out) if out else Path("runs") / time.strftime("run-%Y%m%d-%H%M%S")
        footprint = Footprint.before(run_dir)
        store = RunStore.create(run_dir, config.model_dump(mode="json"), versions())
    hooks: list[RunCallback] = []

    def note(message: str) -> None:
        for hook in hooks:
            hook.on_note(message)

    summaries: list[RoundSummary] = []
    stored = store.last_complete_round()
    if resume is not None and stored is not None and stored + 1 >= config.rounds:
        # Nothing to play: answer at once, without building the parts or touching the run's logs.
        hooks += [*callbacks, *([ConsoleCallback(console)] if console is not None else [])]
        store.close()
        note(f"The run already has {stored + 1} rounds; pass --rounds N (> {stored + 1}) to extend it.")
        return RunResult(store.dir, stored + 1, [], None)
    ended = False  # the run ended as asked (not by an error or an interrupt)
    interrupted: KeyboardInterrupt | None = None
    working: list[PhaseProgress] = []  # the last progress report: where an interrupt caught the round

    def progress(report: PhaseProgress) -> None:
        working[:] = [report]
        for hook in hooks:
            hook.on_progress(report)
    try:
        trackers, missing = tracker_callbacks(config.report_to, config.tracking,
                                              config.model_dump(mode="json"))
        hooks += [*trackers, *callbacks, *([ConsoleCallback(console)] if console is not None else [])]
        if changed:
            from rich.markup import escape  # the stored values are anyone's text

            lines = ["resumed with your safety settings, not the store's:", *("  " + line for line in changed)]
            note(escape("\n".join(lines)))
        for message in missing:
            note(message)
        with make_executor(config.executor, config.sandbox, config.ray) as executor, ExitStack() as stack:
            loop = build_parts(config, store, executor)
            stack.callback(loop.close)
            loop.on_progress = progress
            first = loop.state.next_round
            start = RunStart(store.dir, executor.describe(), str(config.designer), str(config.agent),
                             str(config.designer_reward), first, config.rounds)
            for hook in hooks:
                stack.callback(hook.on_end)
                hook.on_start(start)
            for hook in hooks:
                if isinstance(hook, TensorBoardCallback) and hook.board.active:
                    note(f"TensorBoard scalars → {hook.board.logdir}")
            if first >= config.rounds:
                note(f"The run already has {first} rounds; pass --rounds N (> {first}) to extend it.")
            else:
                cost = round_cost(config, loop)
                if cost:
                    note(cost)
            for n in range(first, config.rounds):
                summary = loop.round(n)
                for hook in hooks:  # after the round is committed, so nothing shown runs ahead of the store
                    hook.on_round(summary)
                if config.time_limit_s and loop.state.elapsed_s >= config.time_limit_s:
                    note(f"time limit of {config.time_limit_s:.0f}s reached after round {n}.")
                    break
            # The caller's summaries are read back from the store once, at the end: held round by round, they would
            # grow a long run's memory with every round played.
            summaries = [RoundSummary.from_dict(s) for s in store.rounds() if s["round"] >= first]
        ended = True
    except LLMError as exc:  # a model server that is down or refuses: stop cleanly, keep the rounds
        if footprint is not None and store.last_complete_round() is None:
            raise UserError(f"{exc} No round finished, so nothing of the run is kept.") from None
        raise UserError(f"{exc} Completed rounds are saved; resume with: spadegym run --resume {store.dir}") from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM where the command unwinds it so (``Terminated``)
        interrupted = exc
        how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        if footprint is not None and store.last_complete_round() is None:
            where = f" ({working[0].line()})" if working else ""
            note(f"{how} before the first round finished{where}: a round is kept only when it is complete, so "
                 f"nothing of the run is kept and {store.dir} is removed; smaller rounds (envs_per_round, plays) "
                 "lose less.")
        else:
            note(f"{how}; completed rounds are saved. Resume with: spadegym run --resume {store.dir}")
    finally:
        last = store.last_complete_round()
        store.close()
        if footprint is not None and last is None and not ended:  # a failed start: nothing to resume
            footprint.erase()
    if interrupted is not None:
        # The completed rounds get their report as a finished run's do; the interrupt then reaches the caller.
        if report and last is not None:
            from ..report import write_report

            note(f"Report: {write_report(store.dir)}")
        raise Interrupted(getattr(interrupted, "status", 130))
    note(f"Run directory: {store.dir}  (resume or extend: spadegym run --resume {store.dir} --rounds N)")
    report_path = None
    if report:
        from ..report import write_report

        report_path = write_report(store.dir)
        note(f"Report: {report_path}")
    return RunResult(store.dir, (last + 1) if last is not None else 0, summaries, report_path)


def check_resume_dir(path: str | Path) -> Path:
    p = Path(path)
    if not (p / "run.sqlite").exists():
        raise UserError(f"{p} holds no run (no run.sqlite); pass the directory a previous `spadegym run` wrote.")
    return p
