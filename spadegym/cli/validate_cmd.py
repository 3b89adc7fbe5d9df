"""`spadegym validate`: the validation gate on files and directories."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ..text import one_line, safe_text
from . import app
from .console import cli_console
from .errors import user_errors

if TYPE_CHECKING:
    from ..validate import ValidationConfig, Verdict


@app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(..., help="Environment files, or directories (searched recursively for *.py files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per file instead of text."),
    hint: str = typer.Option(None, "--hint", help="A hint to check for answer leaks (default: the file's own)."),
    allow_import: list[str] = typer.Option([], "--allow-import", help="Also allow importing this module "
                                           "(repeatable), e.g. numpy for SPADE reference pools."),
) -> None:
    """Check environment files: static lint, sandboxed contract probes, feasibility and degeneracy.

    Exit status 1 when any file is invalid. Every file is gated in the sandbox, whatever it
    says of itself (an OpenEnv server is a level only where a run's configuration names it).

    Examples:

    \b
      spadegym validate my_env.py
      spadegym validate pools/generated/ --json
      spadegym validate guess.py --hint "the number is even"
      spadegym validate spade-pool/games/ --allow-import numpy
    """
    from ..validate import ValidationConfig

    config = ValidationConfig()
    config.allowed_imports += [m for m in allow_import if m not in config.allowed_imports]

    # One line per file and per check, as written: never wrapped at the terminal width, no :emoji: codes replaced.
    console = cli_console(emoji=False)
    invalid = 0
    with user_errors():
        for verdict in _verdicts(list(paths), hint, config):
            invalid += not verdict.valid
            if as_json:
                typer.echo(json.dumps(verdict.to_dict()))
                continue
            if verdict.valid:
                console.print(f"[green]valid[/]    {escape(one_line(verdict.file))} [dim]({verdict.seconds:.2f}s)[/]")
            else:
                console.print(f"[bold red]INVALID[/]  {escape(one_line(verdict.file))} [red]{verdict.category}[/] "
                              f"[dim]({verdict.seconds:.2f}s)[/]")
            for check in verdict.failed:
                console.print(f"  [red]x {check.name}[/]: {escape(_message(check.message))}")
            for check in verdict.warnings:
                console.print(f"  [yellow]! {check.name}[/]: {escape(_message(check.message))}")
    if invalid:
        raise typer.Exit(1)


def _message(text: str) -> str:
    """A check's message on its one line: it may quote the file's own text (an exception's), line breaks included."""
    return safe_text(text).replace("\n", "\\n")


def _verdicts(paths: list[Path], hint: str | None, config: ValidationConfig) -> Iterator[Verdict]:
    """The gate's verdict of each file, in order."""
    from ..validate import expand_paths, validate_paths

    yield from validate_paths(expand_paths(paths), hint=hint, config=config)
