"""`spadegym eval`: score agents on a regression suite (or a pool directory), for people and CI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..agents.registry import AGENTS
from . import app
from .agent_settings import SET_HELP, agent_options, check_settings_apply, settings_for
from .console import cli_console
from .errors import UserError, err_console, fail, is_llm_error, user_errors
from .specs import AGENT_SPECS


@app.command("eval")
def eval_command(
    suite: Path = typer.Argument(..., help="A suite written by `spadegym redteam`, or a folder of environment files."),
    agents: list[str] = typer.Option(..., "--agent", "-a", help=f"Agent (repeat to compare agents side by side): {AGENT_SPECS}."),
    plays: int = typer.Option(1, "--plays", min=1, help="Plays per case seed."),
    seed: int = typer.Option(0, "--seed", help="Seeds the agents' sampling (instance seeds come from the manifest)."),
    concurrency: int = typer.Option(64, "--concurrency", min=1, help="Episodes in flight (sandbox workers / LLM requests)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object (save it for --baseline)."),
    junit: Path = typer.Option(None, "--junit", help="Write JUnit XML here (one test case per suite case)."),
    html: Path = typer.Option(None, "--html", help="Write the HTML scorecard here."),
    baseline: Path = typer.Option(None, "--baseline", help="Earlier --json results: exit 1 if a case it passed is failed now; the cases it failed that pass now are listed as fixed."),
    min_pass_rate: float = typer.Option(None, "--min-pass-rate", min=0, max=1, help="Exit 1 if an agent's pass rate is below this."),
    sets: list[str] = typer.Option(None, "--set", help=SET_HELP + " Each agent reads its own kind's."),
) -> None:
    """Score agents on a suite with the seeds its manifest fixes.

    Exit status: 0 when every agent passes the gates, 1 when a case the
    baseline passed is failed now or a pass rate is below --min-pass-rate,
    2 on a usage error.

    Examples:

    \b
      spadegym eval suites/qwen --agent openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 --junit results.xml
      spadegym eval suites/qwen --agent openai:a@URL --agent openai:b@URL --html scorecard.html
      spadegym eval suites/qwen --agent openai:new@URL --baseline old.json --min-pass-rate 0.8 --json
      spadegym eval suites/qwen --agent hf:models/smollm2 --set train.max_seq_len=4096
    """
    from ..redteam import (
        evaluate_suite,
        fixed,
        load_results,
        load_suite,
        regressions,
        write_junit,
        write_scorecard,
    )
    from ..rollout import RolloutConfig

    with user_errors():
        parsed = {spec: AGENTS.parse(spec) for spec in agents}  # each spec read once, here
        check_settings_apply(list(parsed.values()), sets)
        options = {spec: agent_options(parsed[spec], settings_for(parsed[spec], sets)) for spec in agents}
        loaded = load_suite(suite)
        base = load_results(baseline) if baseline else None
        total = sum(len(c.seeds) for c in loaded.cases) * plays * len(agents)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err_console, transient=True) as progress:
            task = progress.add_task(f"eval {escape(loaded.name)}", total=total)  # a suite's name is data, not markup
            try:
                results = evaluate_suite(loaded, list(agents), plays=plays, seed=seed,
                                         rollout=RolloutConfig(concurrency=concurrency), options_for=options.get,
                                         on_episode=lambda _: progress.advance(task))
            except Exception as exc:
                if is_llm_error(exc):
                    raise UserError(str(exc)) from None
                raise
    broken = regressions(results, base) if base else {}
    low = {a: r["pass_rate"] for a, r in results["agents"].items()
           if min_pass_rate is not None and r["pass_rate"] < min_pass_rate}
    results["regressions"] = broken
    results["fixed"] = fixed(results, base) if base else {}  # failed in the baseline, passed now (what training fixed)
    results["below_min_pass_rate"] = low
    # Every case has been played: the results are shown even when a report file cannot be written.
    unwritten = _write_reports(results, [(junit, write_junit), (html, write_scorecard)])
    if as_json:
        typer.echo(json.dumps(results))
    else:
        _print(results, *(None if path in unwritten else path for path in (junit, html)))
    gates = [f"{a}: {len(ids)} regression(s) against the baseline ({', '.join(ids[:5])})"
             for a, ids in broken.items() if ids]
    gates += [f"{a}: pass rate {rate:.2f} below --min-pass-rate {min_pass_rate:g}" for a, rate in low.items()]
    for line in gates:
        err_console.print(f"[bold red]gate:[/] {escape(line)}", highlight=False, soft_wrap=True)
    if unwritten:
        raise fail("; ".join(unwritten.values()))
    if gates:
        raise typer.Exit(1)


def _write_reports(results: dict, writers: list[tuple[Path | None, Callable]]) -> dict[Path, str]:
    """Write each report file that was asked for; the ones that could not be written, with why (one phrase each)."""
    unwritten = {}
    for path, write in writers:
        if path is None:
            continue
        try:
            write(results, path)
        except (OSError, UserError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            unwritten[path] = f"{path} was not written ({why})"
    return unwritten


def _print(results: dict, junit: Path | None, html: Path | None) -> None:
    table = Table(title=escape(f"spadegym eval {results['suite']} ({len(results['cases'])} cases)"))
    table.add_column("agent")
    table.add_column("passed")
    table.add_column("pass rate")
    for spec, r in results["agents"].items():
        table.add_row(escape(spec), f"{r['passed']}/{len(r['cases'])}", f"{r['pass_rate']:.2f}")
    console = cli_console()
    console.print(table)
    for spec, ids in results.get("fixed", {}).items():
        if ids:
            console.print(escape(f"{spec}: {len(ids)} case(s) the baseline failed are passed now ({', '.join(ids[:5])})"),
                          soft_wrap=True)
    for label, path in (("JUnit", junit), ("Scorecard", html)):
        if path:
            console.print(escape(f"{label}: {path}"), soft_wrap=True)
