"""`spadegym redteam`: find a frozen agent's failures and write them as a regression suite."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer
from rich.markup import escape

from . import app
from .console import cli_console
from .design_cmd import parse_skills
from .errors import UserError, err_console, is_llm_error, user_errors
from .specs import AGENT_SPECS


@app.command("redteam")
def redteam_command(
    target: str = typer.Option(None, "--target", "-t", help=f"The agent under test: {AGENT_SPECS}."),
    out: Path = typer.Option(..., "--out", "-o", help="The suite directory to write (its search record goes to OUT/hunt)."),
    designer: str = typer.Option(None, "--designer", help="search (default) | uniform (the baseline: uniform draws from the same space) | mutation | openai:MODEL[@BASE_URL]"),
    budget: int = typer.Option(None, "--budget", min=1, help="Designer proposals in all (default 64)."),
    rounds: int = typer.Option(None, "--rounds", min=1, help="Or: rounds of --per-round proposals each."),
    per_round: int = typer.Option(None, "--per-round", min=1, help="Proposals per round (default 8)."),
    skills: str = typer.Option(None, "--skills", help="Comma-separated skills (default: all six)."),
    families: str = typer.Option(None, "--families", help="Comma-separated built-in families (default: all of the skills)."),
    reward: str = typer.Option(None, "--reward", help="Designer reward by name or module:function (default: failure)."),
    seed: int = typer.Option(None, "--seed", help="Seed of the search."),
    config: Path = typer.Option(None, "--config", "-c", help="TOML/YAML/JSON file of red-team settings."),
    sets: list[str] = typer.Option(None, "--set", help="Any setting as key=value (repeatable), e.g. --set confirm_seeds=8."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per round, then the result."),
    resume: bool = typer.Option(False, "--resume", help="Continue the search stored in OUT where it stopped (the same settings; --budget N may extend it)."),
) -> None:
    """Turn the loop against a frozen agent: the designer is rewarded for solvable levels it fails.

    Failures are clustered, shrunk to their minimal form, replayed on fresh seeds,
    and written to OUT as a standalone suite (environment files, manifest.json,
    README.md, SHA256SUMS) that `spadegym eval` scores any agent on.

    Examples:

    \b
      spadegym redteam --target openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 --budget 200 --out suites/qwen
      spadegym redteam --target learner:runs/demo/checkpoints/round-0035 --families take_away,knapsack --out suites/l
      spadegym redteam --target openai:m@URL --designer openai:big@URL --rounds 10 --out suites/m
      spadegym redteam --target openai:m@URL --rounds 10 --out suites/m --resume   # after Ctrl-C: go on
    """
    from ..redteam import redteam
    from ..redteam.config import load_redteam_config

    with user_errors():
        overrides = {"target": target, "designer": designer, "per_round": per_round, "reward": reward, "seed": seed,
                     "skills": parse_skills(skills),
                     "families": [f.strip() for f in families.split(",") if f.strip()] if families else None}
        cfg = load_redteam_config(config, overrides, sets)
        if rounds is not None and budget is not None:
            raise UserError("give --budget or --rounds, not both.")
        if budget is not None or rounds is not None:
            cfg = cfg.model_copy(update={"budget": budget or rounds * cfg.per_round})
        console = cli_console(stderr=as_json)
        console.print(f"[bold]spadegym redteam[/] target {cfg.target}, designer {cfg.designer}, "
                      f"{cfg.budget} proposals → {out}", soft_wrap=True)

        def on_round(s: dict) -> None:
            if as_json:
                typer.echo(json.dumps(s))
            else:
                console.print(f"round {s['round']:>3}  valid {s['valid']}/{s['proposals']}  failed {s['failed']}  "
                              f"clusters {s['clusters']}  cases {s['cases']}  {s['seconds']:.1f}s", soft_wrap=True)
                if s.get("unscored"):
                    console.print(f"[yellow]{s['unscored']} level(s) unscored: every play ended in a failure of "
                                  f"the target or the harness, not of the level: "
                                  f"{escape(str(s['unscored_because']))}[/]", soft_wrap=True)
        try:
            result = redteam(cfg, out, on_round=on_round, resume=resume)
        except KeyboardInterrupt:
            err_console.print(escape(f"interrupted; {kept(out)}"), soft_wrap=True, highlight=False)
            raise typer.Exit(130) from None
        except Exception as exc:
            if is_llm_error(exc):
                said = kept(out)
                raise UserError(f"{exc} {said[0].upper()}{said[1:]}") from None
            raise
    if as_json:
        typer.echo(json.dumps(result.to_dict()))
    else:
        console.print(f"{result.cases} cases in {result.clusters} clusters from {result.proposals} proposals "
                      f"({result.failures} failed levels) → {result.suite}", soft_wrap=True)
        if result.cases >= cfg.max_cases and result.proposals < cfg.budget:
            console.print(f"The suite is full (max_cases = {cfg.max_cases}): the search stopped after {result.proposals} "
                          f"of {cfg.budget} proposals; --set max_cases=N keeps more.", soft_wrap=True)
        console.print(f"Score an agent: spadegym eval {result.suite} --agent SPEC --junit results.xml", soft_wrap=True)


def kept(out: Path) -> str:
    """What a stopped search left in ``out`` (its suite as written so far), and the command that resumes it."""
    from ..redteam.hunt import HUNT_DIR

    if not (out / HUNT_DIR / "run.sqlite").is_file():
        return "the search had not begun, so nothing was kept."
    try:
        cases = len(json.loads((out / "manifest.json").read_text(encoding="utf-8"))["cases"])
    except (OSError, ValueError, KeyError, TypeError):
        cases = 0
    command = ["spadegym", *sys.argv[1:], *([] if "--resume" in sys.argv else ["--resume"])]
    return (f"the suite in {out} keeps the {cases} case(s) confirmed so far; resume the search with: "
            f"{shlex.join(command)}")
