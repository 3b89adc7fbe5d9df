"""`spadegym families`: list the built-in environment families and their knobs."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from . import app
from .console import cli_console


@app.command("families")
def families(
    as_json: bool = typer.Option(False, "--json", help="A JSON list of families instead of a table."),
) -> None:
    """List the built-in families: setting (games or tool_use), skill, number of difficulty levels, knobs.

    Level 0 is the easiest; each knob's levels are listed easiest first.

    Examples:

    \b
      spadegym families
      spadegym families --json
    """
    from ..families import FREE_KNOBS, list_families

    fams = list_families()
    if as_json:
        typer.echo(json.dumps([
            {"name": f.name, "skill": f.skill, "setting": f.setting, "description": f.description,
             "levels": f.max_level + 1,
             "knobs": f.knobs, "free_knobs": [k for k in f.knobs if k in FREE_KNOBS]}
            for f in fams
        ]))
        return
    table = Table(title=f"{len(fams)} built-in families (spadegym new NAME --level K -o FILE)")
    for column in ("name", "setting", "skill", "levels", "knobs (levels, easiest first)"):
        table.add_column(column)
    for f in fams:
        knobs = "\n".join(f"{k}: {' / '.join(map(str, v))}" for k, v in f.knobs.items() if k not in FREE_KNOBS)
        table.add_row(f.name, f.setting, f.skill, str(f.max_level + 1), knobs)
    cli_console().print(table)
