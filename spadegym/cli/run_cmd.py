"""`spadegym run`: the self-play loop (no arguments: the embedded default)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from . import app
from .console import cli_console
from .errors import UserError, sigterm_as_interrupt, user_errors
from .specs import AGENT_SPECS, DESIGNER_REWARDS, DESIGNER_SPECS


@app.command("run")
def run_command(
    config: Path = typer.Option(None, "--config", "-c", help="TOML or YAML run configuration."),
    out: Path = typer.Option(None, "--out", "-o", help="Run directory to create (default: runs/run-DATE-TIME)."),
    resume: Path = typer.Option(None, "--resume", help="Continue the run in this directory where it stopped, with your own safety settings (--config, --set sandbox.*: never the store's)."),
    rounds: int = typer.Option(None, "--rounds", help="Total rounds (with --resume: extend a finished run)."),
    seed: int = typer.Option(None, "--seed", help="Run seed."),
    designer: str = typer.Option(None, "--designer", help=f"Designer: {DESIGNER_SPECS}."),
    pool: Path = typer.Option(None, "--pool", help="Environment files to play (a directory, searched recursively, e.g. a SPADE pool): alone the fixed pool of the run; with --designer the run's first levels."),
    sources: list[str] = typer.Option(None, "--source", help="A level source beside the designer (repeatable): reasoning-gym:TASK, a pool directory, openenv:URL; shares and settings: the sources section of --config."),
    agent: str = typer.Option(None, "--agent", help=f"Agent: {AGENT_SPECS}."),
    designer_reward: str = typer.Option(None, "--designer-reward", help=f"Designer reward: {DESIGNER_REWARDS}."),
    time_limit: float = typer.Option(None, "--time-limit", help="Stop after the round that crosses this many seconds."),
    sets: list[str] = typer.Option(None, "--set", help="Override any field: --set buffer.capacity=128 (repeatable)."),
    print_config: bool = typer.Option(False, "--print-config", help="Print the effective configuration (JSON) and exit."),
    describe: bool = typer.Option(False, "--describe", help="With --print-config: every setting as key = value under its description."),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write report.html at the end."),
) -> None:
    """Run self-play: the designer writes environments, the agent plays and learns, regret drives the curriculum.

    Examples:

    \b
      spadegym run                                   # the embedded default, a few minutes on a CPU
      spadegym run --rounds 60 --out runs/long --set plays=32
      spadegym run --designer openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 --agent learner
      spadegym run --agent random --source reasoning-gym:chain_sum   # a task's levels beside the families
      spadegym run --resume runs/long --rounds 80    # continue or extend
    """

    from ..loop import load_config, run
    from ..loop.config import read_settings
    from ..loop.run import check_resume_dir

    with user_errors(), sigterm_as_interrupt():
        overrides = {"rounds": rounds, "seed": seed, "designer": designer or ("pool" if pool else None),
                     "agent": agent, "designer_reward": designer_reward, "time_limit_s": time_limit,
                     "pool": {"path": str(pool)} if pool else None,
                     "sources": [{"source": spec} for spec in sources] if sources else None}
        if resume is not None:
            # A resumed run replays the experiment in its store and takes the safety settings from you (defaults,
            # --config, --set; see loop.safety); a setting that would change the experiment is refused.
            if out is not None:
                raise UserError(f"--out cannot change a resumed run, which continues in {resume}; drop it, or start "
                                "a new run with --out DIR alone.")
            check_resume_dir(resume)
            settings = read_settings(config, overrides, sets, "sandbox.seccomp=true")
            if print_config:
                from ..loop.safety import resumed_config
                from ..store import RunStore

                with RunStore.open(resume) as store:
                    resumed, _changed = resumed_config(store.config, settings, resume)
                _print_config(resumed, describe)
                return
            run(resume=resume, rounds=rounds, settings=settings, report=not no_report, console=cli_console())
            return
        cfg = load_config(config, overrides, sets)
        if print_config:
            _print_config(cfg, describe)
            return
        run(cfg, out, report=not no_report, console=cli_console())


def _print_config(config, describe: bool) -> None:
    """JSON, or with ``describe`` a TOML file (each setting under its description) that ``--config`` loads."""
    from pydantic import BaseModel

    from ..reference import describe_toml

    if not describe:
        typer.echo(json.dumps(config.model_dump(mode="json") if isinstance(config, BaseModel) else config, indent=2))
        return
    typer.echo(describe_toml(config), nl=False)
