"""`spadegym import`: another library's tasks as a pool of environment files."""

from __future__ import annotations

from pathlib import Path

import typer

from ..families.imported import INSTANCES
from . import app
from .errors import UserError, err_console, user_errors


@app.command("import")
def import_levels(
    source: str = typer.Argument(..., help="What to import: reasoning-gym:TASK."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the environment files into."),
    levels: str = typer.Option("", "--levels", help="Difficulty levels, comma-separated (default: all)."),
    instances: int = typer.Option(INSTANCES, "--instances", min=1, help="Instances of the task's generator a level draws from (a reset seed picks one)."),
    seed: int = typer.Option(0, "--seed", help="Seed of reasoning-gym's generator."),
) -> None:
    """Write a reasoning-gym task as environment files, one per difficulty level (its curriculum's knobs).

    The files are a pool like any other: validate, play, serve or train on them.

    Examples:

    \b
      spadegym import reasoning-gym:basic_arithmetic --out pool/
      spadegym import reasoning-gym:chain_sum --levels 0,2,4 --out pool/
    """
    from ..designers.sources import REASONING_GYM, SOURCES, UnknownSource

    with user_errors():
        try:
            spec = SOURCES.parse(source)
        except UnknownSource:
            spec = None
        if spec is None or spec.kind != REASONING_GYM:
            raise UserError(f"cannot import {source!r}; use {REASONING_GYM}:TASK (e.g. reasoning-gym:basic_arithmetic).")
        try:
            wanted = [int(k) for k in levels.split(",") if k.strip()] or None
        except ValueError:
            raise UserError(f"--levels must be whole numbers separated by commas, got {levels!r}.") from None
        from ..adapters.reasoning_gym_levels import ReasoningGymLevels, write_pool

        written = write_pool(ReasoningGymLevels(spec.argument, wanted, instances, seed), out)
        for path in written:
            typer.echo(str(path))
        err_console.print(f"{len(written)} level(s) written; check them with spadegym validate {out}", highlight=False)
