"""`spadegym doctor`: what this machine supports (sandbox tier, optional extras, framework integrations)."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from . import app
from .console import cli_console
from .errors import user_errors


@app.command("doctor")
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Show the sandbox isolation tier, each layer available or why not, Python, extras and integrations.

    Examples:

    \b
      spadegym doctor
      spadegym doctor --json | jq .sandbox.tier
    """
    from ..adapters.integrations import integrations
    from ..sandbox import doctor as run_doctor

    with user_errors():
        facts = run_doctor()
        facts["integrations"] = integrations()
    if as_json:
        typer.echo(json.dumps(facts))
        return
    console = cli_console()
    box = facts["sandbox"]
    console.print(f"sandbox tier: [bold]{box['tier']}[/]  (landlock ABI {box['landlock_abi'] or 'none'})")
    for name, layer in box["layers"].items():
        if layer["available"]:
            console.print(f"  [green]yes[/] {name:<9} {escape(layer['what'])}")
        else:
            console.print(f"  [red]no[/]  {name:<9} {escape(layer['why_missing'] or 'unavailable')}")
    console.print(f"python: {facts['python']['version']} ({escape(facts['python']['executable'])})")
    console.print(f"platform: {escape(facts['platform'])}")
    console.print("extras:")
    for name, version in facts["extras"].items():
        shown = f"[green]{escape(version)}[/]" if version else "[dim]not installed[/]"
        console.print(f"  {name:<12} {shown}")
    console.print("integrations:")
    for name, item in facts["integrations"].items():
        if item["available"]:
            console.print(f"  [green]yes[/] {name:<10} {escape(str(item['version']))}: {escape(str(item['what']))}")
        else:
            console.print(f"  [red]no[/]  {name:<10} {escape(str(item['why_missing']))}")
    console.print("environment modules (SPADE reference files):")
    for name, what in facts["environments"].items():
        shown = escape(what) if what else "[dim]not installed[/]"
        console.print(f"  {name:<12} {shown}")
