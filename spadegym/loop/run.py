"""`spadegym run`: start, resume or extend a self-play run in a run directory."""

from __future__ import annotations

import platform
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import UserError
from ..executor import Executor, make_executor
from ..llm.client import LLMError
from ..sandbox import Sandbox
from ..store import RunStore
from ..store.record import RoundSummary
from .config import RunConfig, validate_config
from .selfplay import SelfPlay
from .tensorboard import ScalarBoard


@dataclass
class RunResult:
    run_dir: Path
    rounds: int
    summaries: list[RoundSummary]
    report: Path | None


def versions() -> dict[str, str]:
    import numpy

    from .. import __version__

    return {"spadegym": __version__, "python": platform.python_version(), "numpy": numpy.__version__}


def agent_options(config: RunConfig) -> dict[str, Any]:
    """The section of the config the agent's kind reads: ``learner`` for the learner, ``llm`` for a model."""
    kind = config.agent.partition(":")[0]
    if kind == "learner":
        return {"config": config.learner}
    if kind == "openai":
        return config.llm.model_dump()
    return {}


def build_parts(config: RunConfig, store: RunStore, executor: Executor) -> SelfPlay:
    from ..agents import make_agent
    from ..designers.registry import make_designer

    llm = config.llm.model_dump()
    # A designer that validates as it writes (the LLM one) needs a sandbox in this process.
    sandbox = executor.sandbox if isinstance(executor.sandbox, Sandbox) else None
    # Each kind picks its own section (mutation, llm_designer, learner, llm) and ignores the others.
    designer = make_designer(config.designer, seed=config.seed, sandbox=sandbox, corpus=config.corpus, llm=llm,
                             validation=config.validation, rounds=config.rounds, mutation=config.mutation,
                             llm_designer=config.llm_designer)
    agent = make_agent(config.agent, seed=config.seed, **agent_options(config))
    return SelfPlay(config, store, executor, designer, agent)  # a resumed learner restores its checkpoint there


def run(config: RunConfig | None = None, out: str | Path | None = None, *, resume: str | Path | None = None,
        rounds: int | None = None, console: Console | None = None, report: bool = True) -> RunResult:
    """Run (or resume) self-play; every round is committed to ``out/run.sqlite`` as it finishes."""
    console = console or Console()
    if resume is not None:
        store = RunStore.open(resume)
        config = validate_config(store.config, source=f"{resume}/run.sqlite")
        if rounds is not None:
            config = config.model_copy(update={"rounds": rounds})
    else:
        config = config or RunConfig()
        run_dir = Path(out) if out else Path("runs") / time.strftime("run-%Y%m%d-%H%M%S")
        store = RunStore.create(run_dir, config.model_dump(mode="json"), versions())
    summaries: list[RoundSummary] = []
    try:
        with make_executor(config.executor, config.sandbox, config.ray) as executor, ExitStack() as stack:
            console.print(f"[bold]spadegym run[/] → {store.dir}  ({executor.describe()}, "
                          f"designer: {config.designer}, agent: {config.agent}, reward: {config.designer_reward})",
                          highlight=False, soft_wrap=True)
            loop = build_parts(config, store, executor)
            stack.callback(loop.close)
            board = stack.enter_context(ScalarBoard(store.dir if config.tensorboard else None))
            if board.active:
                console.print(f"TensorBoard scalars → {board.logdir}", highlight=False, soft_wrap=True)
            first = loop.state.next_round
            if first >= config.rounds:
                console.print(f"The run already has {first} rounds; pass --rounds N (> {first}) to extend it.")
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=console, transient=True) as progress:
                task = progress.add_task("self-play rounds", total=config.rounds, completed=first)
                for n in range(first, config.rounds):
                    summary = loop.round(n)
                    summaries.append(summary)
                    board.add(summary.to_dict())  # after the round is committed, so the board never runs ahead
                    console.print(summary_line(summary), highlight=False, soft_wrap=True)
                    progress.update(task, advance=1)
                    if config.time_limit_s and loop.state.elapsed_s >= config.time_limit_s:
                        console.print(f"time limit of {config.time_limit_s:.0f}s reached after round {n}.")
                        break
    except LLMError as exc:  # a model server that is down or refuses: stop cleanly, keep the rounds
        raise UserError(f"{exc} Completed rounds are saved; resume with: spadegym run --resume {store.dir}") from None
    except KeyboardInterrupt:
        console.print(f"interrupted; completed rounds are saved. Resume with: spadegym run --resume {store.dir}")
        raise
    finally:
        last = store.last_complete_round()
        store.close()
    console.print(f"Run directory: {store.dir}  (resume or extend: spadegym run --resume {store.dir} --rounds N)",
                  highlight=False, soft_wrap=True)
    report_path = None
    if report:
        from ..report import write_report

        report_path = write_report(store.dir)
        console.print(f"Report: {report_path}", highlight=False, soft_wrap=True)
    return RunResult(store.dir, (last + 1) if last is not None else 0, summaries, report_path)


def summary_line(s: RoundSummary) -> str:
    """One line per round: what the designer made, how the agent did, what the curriculum holds."""
    def f(value: float | None, fmt: str = ".2f") -> str:
        return "  -  " if value is None else format(value, fmt)

    held = f"  heldout {s.heldout['heldout_success']:.2f}/{s.heldout.get('heldout_success_hint', 0):.2f}" \
        if "heldout_success" in s.heldout else ""
    return (f"round {s.round:>3}  valid {s.valid}/{s.proposals}  played {s.played} "
            f"(replay {s.replayed})  win {f(s.win_rate)}  hint {f(s.win_rate_hint)}  "
            f"regret {f(s.regret_mean, '+.2f')}  band {f(s.band_fraction)}  "
            f"difficulty {f(s.difficulty_mean)}{held}  {s.seconds:.1f}s")


def check_resume_dir(path: str | Path) -> Path:
    p = Path(path)
    if not (p / "run.sqlite").exists():
        raise UserError(f"{p} holds no run (no run.sqlite); pass the directory a previous `spadegym run` wrote.")
    return p
