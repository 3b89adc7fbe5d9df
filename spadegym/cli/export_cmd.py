"""`spadegym export`: datasets of a run's environments, episodes and rounds."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app
from .errors import UserError, user_errors


@app.command("export")
def export(
    run_dir: Path = typer.Argument(..., help="A run directory (the --out of `spadegym run`), or a suite (`spadegym redteam`)."),
    format: str = typer.Option(
        "jsonl",
        "--format",
        "-f",
        help="jsonl, parquet or hf (a datasets save_to_disk folder; both need pip install 'spadegym[export]'), or spade (the SPADE reference's pool layout).",
    ),
    what: str = typer.Option(None, "--what", help="envs, episodes or rounds; default: all of them."),
    out: Path = typer.Option(
        None,
        "--out",
        "-o",
        help="Output file (directory for hf/spade, or when --what is omitted); default RUN_DIR/exports.",
    ),
) -> None:
    """Export a run as datasets (a red-team suite: its cases, as a run's environments).

    Examples:

    \b
      spadegym export runs/demo --format jsonl
      spadegym export runs/demo --format hf --what episodes --out data/episodes
      spadegym export runs/demo --format spade --out pools/demo
      spadegym export suites/qwen --format parquet
    """
    from ..store.export import export_run

    with user_errors():
        if (run_dir / "manifest.json").exists() and not (run_dir / "run.sqlite").exists():
            from ..redteam.suite import export_suite

            if what not in (None, "envs"):
                raise UserError("a suite holds environments only; use --what envs (its search is a run in SUITE/hunt).")
            typer.echo(str(export_suite(run_dir, format=format, out=out)))
            return
        for path in export_run(run_dir, format=format, what=what, out=out, note=lambda m: typer.echo(m, err=True)):
            typer.echo(str(path))
