"""`spadegym learn`: train the built-in learner on a fixed pool of environment files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from . import app
from .console import cli_console
from .errors import UserError, user_errors


def collect_envs(paths: list[Path]) -> dict[str, Any]:
    """FILE or DIR arguments (folders searched recursively, e.g. a SPADE pool) -> {file stem: Level}."""
    from ..envfile import SourceError, inspect_source, read_source
    from ..level import Level
    from ..text import safe_text
    from ..validate.gate import expand_paths

    try:
        files = expand_paths(list(paths))
    except SourceError as exc:
        raise UserError(str(exc)) from None
    envs: dict[str, Any] = {}
    for file in files:
        source = read_source(file)
        try:
            inspect_source(source, str(file))
        except SourceError as exc:  # one sentence, naming the file, for a file that is no environment
            raise UserError(f"{safe_text(str(file))}: {exc}") from None
        if file.stem in envs:
            raise UserError(f"two environment files are named '{file.stem}.py'; rename one so that each name is unique.")
        envs[file.stem] = Level(source)
    return envs


def playable(sandbox: Any, envs: dict[str, Any], explicit: set[str]) -> tuple[dict[str, Any], list[str]]:
    """The environments the learner can play (listed actions: valid_actions() or a menu in the
    observation), and the names of those skipped; a file named on the command line must be playable."""
    from ..envfile.reference import listed_actions

    kept, skipped = {}, []
    for name, spec in envs.items():  # a file that cannot load is a user error, before any training
        filename = f"{name}.py"
        handle = sandbox.open(spec.source, filename)
        try:
            if not handle.loaded.ok:
                raise UserError(f"{filename} ({name}) does not load in the sandbox ({handle.loaded.status}: "
                                f"{handle.loaded.message}); run `spadegym validate {filename}`.")
            first = handle.reset(seed=0, want=["valid_actions"])
        finally:
            handle.close()
        if first.ok and listed_actions(first.value.get("valid_actions"), first.value["observation"]):
            kept[name] = spec
        elif name in explicit:
            raise UserError(
                f"the learner picks among listed actions; {filename} has no valid_actions() and its first "
                "observation lists no actions: add valid_actions(), or play the file with a text agent "
                "(spadegym play FILE --agent openai:MODEL).")
        else:
            skipped.append(filename)
    if not kept:
        raise UserError("none of the environment files lists its actions, so the learner cannot play them; "
                        "play them with a text agent (spadegym play DIR --agent openai:MODEL).")
    return kept, skipped


def curve_table(point: dict[str, Any]) -> Table:
    table = Table(title=f"{point['episodes']} episodes, {point['seconds']:.1f} s",
                  title_justify="left")
    table.add_column("environment")
    table.add_column("success", justify="right")
    table.add_column("with hint", justify="right")
    table.add_column("mean return", justify="right")
    table.add_column("with hint", justify="right")
    for name, result in point["envs"].items():
        table.add_row(name, f"{result['success']:.2f}", f"{result['success_hint']:.2f}",
                      f"{result['return']:.2f}", f"{result['return_hint']:.2f}")
    return table


@app.command("learn")
def learn(
    paths: list[Path] = typer.Argument(..., help="Environment files, or folders of them (searched recursively); each lists its actions (valid_actions() or a menu in the observation)."),
    episodes: int = typer.Option(4096, "--episodes", "-n", min=1, help="Training episodes in all."),
    hint_fraction: float = typer.Option(0.5, "--hint-fraction", min=0.0, max=1.0,
                                        help="Share of training plays that see the hint line."),
    eval_every: int = typer.Option(None, "--eval-every", min=1, help="Evaluate every K episodes (default: 8 points)."),
    eval_seeds: int = typer.Option(32, "--eval-seeds", min=1, help="Held-out instances per environment and arm."),
    group_size: int = typer.Option(8, "--group-size", min=2, help="Plays per environment instance (GRPO group)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the learner and of the instances."),
    out: Path = typer.Option(Path("learner-checkpoint"), "--out", "-o", help="Checkpoint folder (load it with --agent learner:DIR)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per evaluation point."),
) -> None:
    """Train the built-in CPU learner on a fixed pool and print its learning curve.

    Each evaluation point shows, per environment, the success rate on held-out
    seeds without and with the hint. The checkpoint goes to OUT.

    Examples:

    \b
      spadegym learn envs/ --episodes 8000
      spadegym learn maze.py keys.py --hint-fraction 0.5 --eval-every 1000 --json
      spadegym play maze.py --agent learner:learner-checkpoint
    """
    from ..agents.learner import make_learner, train
    from ..rollout import RolloutError
    from ..sandbox import Sandbox

    console = cli_console()
    with user_errors():
        envs = collect_envs(paths)
        every = eval_every or max(1, episodes // 8)

        def on_eval(point: dict[str, Any]) -> None:
            if as_json:
                print(json.dumps(point), flush=True)
            else:
                console.print(curve_table(point))

        learner = make_learner(seed=seed)
        with Sandbox() as sandbox:
            envs, skipped = playable(sandbox, envs, {p.stem for p in paths if p.is_file()})
            if skipped:
                cli_console(stderr=True).print(f"skipped {len(skipped)} files that list no actions: "
                                           f"{', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}",
                                           highlight=False)
            try:
                train(learner, sandbox, envs, episodes=episodes, group_size=group_size,
                      hint_fraction=hint_fraction, eval_every=every, eval_seeds=eval_seeds,
                      on_eval=on_eval, seed=seed)
            except RolloutError as exc:
                raise UserError(str(exc)) from None
        learner.save(out)
        cli_console(stderr=True).print(f"checkpoint: {out} (play it with --agent learner:{out})", highlight=False)
