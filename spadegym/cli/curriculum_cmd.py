"""`spadegym curriculum`: serve a run's live curriculum to trainers on this machine until stopped."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import typer

from . import app
from .errors import err_console, user_errors


@app.command("curriculum")
def curriculum(
    out: Path = typer.Option(..., "--out", help="The run directory: a new run, or the stored one resumed."),
    config: Path = typer.Option(
        None, "--config", help="A `spadegym run` config file (without `agent`: the trainer's model plays)."
    ),
    generations: int = typer.Option(
        None,
        "--generations",
        min=1,
        help="The trainer's rollouts per prompt (default: the config's group_size, which it must equal).",
    ),
    port: int = typer.Option(
        0,
        "--port",
        min=0,
        max=65535,
        help="Port on 127.0.0.1 (0: any free port; clients read it from OUT/curriculum.json).",
    ),
) -> None:
    """Serve the curriculum of a config to trainers on this machine (verifiers, or TRL started apart).

    Clients find it through OUT/curriculum.json (owner-only). Rounds are committed to OUT/run.sqlite as
    their plays come in; Ctrl-C stops it, and the same command resumes it.

    Example:

    \b
      spadegym curriculum --config examples/configs/curriculum.toml --out runs/vf
      vf-eval spadegym-verifiers --env.taskset.curriculum runs/vf --num-rollouts 2 ...
    """
    from ..adapters.curriculum_service import CurriculumService
    from ..loop.driven import driven_curriculum

    with (
        user_errors(),
        driven_curriculum(config, out, generations=generations, trainer="spadegym curriculum") as driven,
        CurriculumService(driven, port=port) as service,
    ):
        service.write_address(out)
        err_console.print(
            f"serving the curriculum of {config or 'the defaults'} on {service.url} for {out} "
            f"(clients read {out}/curriculum.json); Ctrl-C stops it",
            highlight=False,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:  # what was drawn and reported, for the log
            typer.echo(json.dumps(driven.status()))
