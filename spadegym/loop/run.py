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
from .config import RunConfig, validate_config
from .selfplay import SelfPlay, resume_checkpoint
from .tensorboard import ScalarBoard


@dataclass
class RunResult:
    run_dir: Path
    rounds: int
    summaries: list[dict[str, Any]]
    report: Path | None


def versions() -> dict[str, str]:
    import numpy

    from .. import __version__

    return {"spadegym": __version__, "python": platform.python_version(), "numpy": numpy.__version__}


def _agent_spec(config: RunConfig, store: RunStore) -> tuple[str, bool]:
    """The agent to build, and whether it learns (resumed learners load their checkpoint)."""
    spec = config.agent
    learns = spec == "learner" or spec.startswith("learner:") or spec.startswith("hf:")
    checkpoint = resume_checkpoint(store)
    if learns and checkpoint is not None and spec.startswith("learner"):
        spec = f"learner:{checkpoint}"
    return spec, learns


def build_parts(config: RunConfig, store: RunStore, executor: Executor) -> SelfPlay:
    from ..agents import make_agent
    from ..designers.pool import PoolDesigner, pool_files
    from ..designers.registry import make_designer

    llm = config.llm.model_dump()
    # A designer that validates as it writes (the LLM one) needs a sandbox in this process.
    sandbox = executor.sandbox if isinstance(executor.sandbox, Sandbox) else None
    # hf: roles share one policy per model path (same path = shared weights).
    hf = {"train": config.train, "policies": _policies(config)}
    designer = None
    if config.designer != "pool":
        designer = make_designer(config.designer, seed=config.seed, sandbox=sandbox, corpus=config.corpus,
                                 llm=llm, validation=config.validation, rounds=config.rounds,
                                 **({"config": config.mutation} if config.designer == "mutation" else {}),
                                 **(hf if config.designer.startswith("hf:") else {}))
    if config.pool:  # the pool's files first: alone (designer 'pool'), or as the seed levels of the designer
        designer = PoolDesigner(pool_files(config.pool), then=designer)
    spec, learns = _agent_spec(config, store)
    agent = make_agent(spec, seed=config.seed, **(llm if spec.startswith("openai:") else {}),
                       **(hf if spec.startswith("hf:") else {}))
    checkpoint = resume_checkpoint(store)
    if checkpoint is not None:  # models that train continue from the last committed round
        for part in {id(agent): agent, id(designer): designer}.values():
            if hasattr(part, "restore") and (part is designer or learns):
                part.restore(checkpoint)
    return SelfPlay(config, store, executor, designer, agent, learns=learns)


def _policies(config: RunConfig) -> Any:
    if not (config.agent.startswith("hf:") or config.designer.startswith("hf:")):
        return None
    from ..train import PolicyPool

    return PolicyPool(config.train, config.seed)


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
    summaries: list[dict[str, Any]] = []
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
                    board.add(summary)  # after the round is committed, so the board never runs ahead
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


def summary_line(s: dict[str, Any]) -> str:
    """One line per round: what the designer made, how the agent did, what the curriculum holds."""
    def f(key: str, fmt: str = ".2f") -> str:
        value = s.get(key)
        return "  -  " if value is None else format(value, fmt)

    held = f"  heldout {s['heldout_success']:.2f}/{s.get('heldout_success_hint', 0):.2f}" \
        if "heldout_success" in s else ""
    diversity = s.get("diversity") or {}
    pool = diversity.get("pool_code")
    div = "" if pool is None else f"  diversity {pool:.2f}" + (" (pool collapsed)" if diversity.get("collapsed") else "")
    return (f"round {s['round']:>3}  valid {s['valid']}/{s['proposals']}  played {s['played']} "
            f"(replay {s['replayed']})  win {f('win_rate')}  hint {f('win_rate_hint')}  "
            f"return {f('return_mean')}/{f('return_mean_hint')}  "
            f"regret {f('regret_mean', '+.2f')}  band {f('band_fraction')}  "
            f"difficulty {f('difficulty_mean')}{held}{div}{_training(s)}  {s['seconds']:.1f}s")


def _training(s: dict[str, Any]) -> str:
    """The model-training part of a round line: each role's reward and KL, and the reward-hacking flag."""
    learner = s.get("learner") or {}
    parts = [f"{role} kl {learner[f'{role}_kl_sampling']:.4f}" for role in ("agent", "designer")
             if isinstance(learner.get(f"{role}_kl_sampling"), (int, float))]
    if (s.get("designer_watch") or {}).get("flag"):
        parts.append("REWARD-HACKING FLAG (designer reward up, held-out success and diversity down)")
    return ("  " + "  ".join(parts)) if parts else ""


def check_resume_dir(path: str | Path) -> Path:
    p = Path(path)
    if not (p / "run.sqlite").exists():
        raise UserError(f"{p} holds no run (no run.sqlite); pass the directory a previous `spadegym run` wrote.")
    return p
