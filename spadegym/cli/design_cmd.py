"""`spadegym design`: generate and validate a static pool of environments."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from . import app
from .console import cli_console
from .errors import UserError, is_llm_error, user_errors
from .specs import DESIGNER_SPECS


def parse_skills(text: str | None) -> list[str] | None:
    """``"math,logical deduction"`` -> skill names (exact, case-insensitive, or a unique prefix)."""
    from ..families import ALL_SKILLS as SKILLS

    if not text:
        return None
    chosen = []
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        matches = [s for s in SKILLS if s.lower() == raw.lower()] or \
                  [s for s in SKILLS if s.lower().startswith(raw.lower())]
        if len(matches) != 1:
            near = difflib.get_close_matches(raw.title(), SKILLS, n=1, cutoff=0.4)
            suggestion = f" Did you mean '{near[0]}'?" if near else ""
            raise UserError(f"--skills: '{raw}' names no skill; choose from {', '.join(SKILLS)}.{suggestion}")
        chosen.append(matches[0])
    return chosen or None


@app.command("design")
def design_command(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the environments (created if missing)."),
    designer: str = typer.Option("mutation", "--designer", help=f"Designer: {DESIGNER_SPECS}."),
    count: int = typer.Option(8, "--count", "-n", min=1, help="Proposals to make."),
    skills: str = typer.Option(None, "--skills", help="Comma-separated skills (default: all six)."),
    corpus: Path = typer.Option(None, "--corpus", help="JSONL grounding corpus for the LLM designer (default: the shipped one)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the designer."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
) -> None:
    """Generate environments with a designer, validate them, and write the valid ones to OUT.

    Rejected proposals go to OUT/rejected/ with their verdicts.

    Examples:

    \b
      spadegym design --count 12 --out pool/
      spadegym design --designer openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 --skills "Optimization" --out pool/
      spadegym design --designer openai:my-model --corpus docs.jsonl --count 24 --out pool/ --json
    """
    from ..designers.base import ModelDesigner
    from ..designers.design import design
    from ..designers.registry import DESIGNERS, make_designer
    from ..sandbox import Sandbox

    with user_errors():
        chosen = parse_skills(skills)
        box = Sandbox()
        made = None
        try:
            # A designer that validates as it writes does so in this command's sandbox; --corpus is for one that grounds.
            spec = DESIGNERS.parse(designer)  # the one reading of the spec
            options = {"sandbox": box} if DESIGNERS.kind(spec).takes("sandbox") else {}
            made = make_designer(spec, seed=seed, **options, **({"corpus": str(corpus)} if corpus else {}))
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                          MofNCompleteColumn(), console=cli_console(stderr=True), transient=True,
                          disable=as_json) as progress:
                task = progress.add_task(f"designing with {designer}", total=count)
                summary = design(made, count, chosen, out, box, seed=seed,
                                 on_judged=lambda *_: progress.advance(task))
        except Exception as exc:
            if is_llm_error(exc):
                raise UserError(str(exc)) from None
            raise
        finally:
            if isinstance(made, ModelDesigner):
                made.close()
            box.close()
    if as_json:
        typer.echo(json.dumps(summary.to_dict()))
        return
    table = Table(title=f"spadegym design ({summary.designer})", show_header=False)
    table.add_row("written to", summary.out_dir)
    table.add_row("proposals", str(summary.proposals))
    table.add_row("valid", f"{summary.valid} ({summary.valid_first_attempt} at first attempt)")
    table.add_row("repaired", str(summary.repaired))
    for reason, n in summary.refused.items():
        table.add_row(f"refused: {reason}", str(n))
    stats = summary.designer_stats
    if "repair_turns" in stats:  # the LLM designer's own counts
        table.add_row("repair turns", str(stats["repair_turns"]))
        table.add_row("hints rewritten", str(stats.get("hints_rewritten", 0)))
        for fix, n in stats.get("fixes", {}).items():
            table.add_row(f"code fixed: {fix}", str(n))
    table.add_row("seconds", f"{summary.seconds:.1f} ({summary.proposals_per_second:.2f} proposals/s)")
    cli_console().print(table)
