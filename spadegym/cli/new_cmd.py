"""`spadegym new`: render one built-in family level as a standalone environment file."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from . import app
from .console import cli_console
from .errors import UserError, user_errors


@app.command("new")
def new(
    family: str = typer.Argument(..., help="Family name (see `spadegym families`)."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the environment file."),
    level: str = typer.Option("0", "--level", help="Difficulty level: 0 (easiest) up to the family's last, or 'max'."),
    sets: list[str] = typer.Option(None, "--set", help="Override one knob: --set knob=value (repeatable)."),
    seed: int = typer.Option(None, "--seed", help="Pick the 'variant' knob (which instances reset seeds draw)."),
) -> None:
    """Write one environment file from a built-in family.

    Examples:

    \b
      spadegym new grid_maze -o maze.py
      spadegym new code_breaker --level max -o hard_code.py
      spadegym new knapsack --set items=6 --set reward_shaping=sparse -o knapsack.py
    """
    from ..families import FamilyError, new_environment

    with user_errors():
        overrides = {}
        for item in sets or []:
            knob, sep, value = item.partition("=")
            if not sep or not knob.strip():
                raise UserError(f"--set {item!r} must look like knob=value, e.g. --set size=5.")
            overrides[knob.strip()] = value.strip()
        try:
            fam, knobs, source = new_environment(family, level, overrides, seed)
        except FamilyError as exc:
            raise UserError(str(exc)) from None
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(source, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {out}: {exc.strerror}; choose another --out path.") from None
    console = cli_console()
    shown = ", ".join(f"{k}={v}" for k, v in knobs.items())
    console.print(f"wrote {escape(str(out))} ({fam.name}, {fam.skill}; {escape(shown)})")
    console.print(f"  validate: spadegym validate {escape(str(out))}")
    console.print(f"  play:     spadegym play {escape(str(out))} --agent random --episodes 3")
