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
        help="jsonl, parquet or hf (a datasets save_to_disk folder; both need the export extra), or spade (the SPADE reference's pool layout).",
    ),
    what: str = typer.Option(None, "--what", help="envs, episodes or rounds (default: all of them); or model: the run's trained policy as a Hugging Face model folder (needs the train extra)."),
    out: Path = typer.Option(
        None,
        "--out",
        "-o",
        help="Output file (directory for hf/spade, or when --what is omitted); default RUN_DIR/exports.",
    ),
    push_to_hub: str = typer.Option(None, "--push-to-hub", metavar="REPO", help="Also push the tables (parquet) and their dataset card to this Hugging Face dataset repo, e.g. me/my-levels (HF_TOKEN; needs the export extra); with --what model, the model folder to this model repo."),
    private: bool = typer.Option(False, "--private", help="With --push-to-hub: create the repo private."),
    merge: bool = typer.Option(True, "--merge/--adapter", help="With --what model: the LoRA merged into the base weights (default), or the adapter alone."),
    license: str = typer.Option("unknown", "--license", metavar="ID", help="The Hub license id the dataset card names (apache-2.0, cc-by-4.0, ...)."),
) -> None:
    """Export a run as datasets (a red-team suite: its cases, as a run's environments).

    Examples:

    \b
      spadegym export runs/demo --format jsonl
      spadegym export runs/demo --format hf --what episodes --out data/episodes
      spadegym export runs/demo --format spade --out pools/demo
      spadegym export suites/qwen --format parquet
      spadegym export runs/demo --format hf --push-to-hub me/demo-levels
      spadegym export runs/hf --what model --push-to-hub me/demo-agent

    --format hf also writes a dataset card (README.md with the Hub's YAML metadata) beside the tables.
    --what model writes safetensors weights, the tokenizer and a model card (default RUN_DIR/exports/model).
    """
    from ..store.export import export_run

    with user_errors():
        if what == "model":
            _export_model(run_dir, out, merge, push_to_hub, private)
            return
        if (run_dir / "manifest.json").exists() and not (run_dir / "run.sqlite").exists():
            from ..redteam.suite import export_suite

            if what not in (None, "envs"):
                raise UserError("a suite holds environments only; use --what envs (its search is a run in SUITE/hunt).")
            typer.echo(str(export_suite(run_dir, format=format, out=out)))
            if push_to_hub:
                from ..redteam.suite import load_suite, suite_rows
                from ..store.hub import push_tables, source_facts

                suite = load_suite(run_dir)
                facts = source_facts(suite.path, "a red-team suite", {"cases": len(suite.cases)})
                typer.echo(push_tables(push_to_hub, {"envs": suite_rows(suite)}, facts, private=private,
                                       license=license))
            return
        for path in export_run(run_dir, format=format, what=what, out=out, note=lambda m: typer.echo(m, err=True),
                               license=license):
            typer.echo(str(path))
        if push_to_hub:
            from ..store.hub import push_to_hub as push

            typer.echo(push(run_dir, push_to_hub, private=private, tables=[what] if what else None, license=license))


def _export_model(run_dir: Path, out: Path | None, merge: bool, repo: str | None, private: bool) -> None:
    """The run's trained policy as a model folder, pushed to the model repo ``repo`` when one is named."""
    from ..store.model_export import export_model  # says what to install when the train extra is missing

    folder = export_model(run_dir, out, merge=merge)
    typer.echo(str(folder))
    if repo:
        from ..store.hub import push_folder

        typer.echo(push_folder(folder, repo, "model", private=private))
