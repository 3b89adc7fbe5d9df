"""`spadegym report`: write RUN_DIR/report.html from the run store."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app
from .errors import user_errors


@app.command("report")
def report(
    run_dir: Path = typer.Argument(..., help="A run directory (the --out of `spadegym run`)."),
) -> None:
    """Write a self-contained HTML report of a run (finished or interrupted).

    Example:
      spadegym report runs/demo && xdg-open runs/demo/report.html
    """
    from ..report import write_report

    with user_errors():
        typer.echo(str(write_report(run_dir)))
