"""`spadegym play`: play an environment file with an agent and print the transcripts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.text import Text

from ..text import safe_text
from . import app
from .agent_settings import SET_HELP, agent_options
from .console import cli_console
from .errors import UserError, err_console, fail, user_errors
from .specs import AGENT_SPECS


def episode_json(episode: Any, env: str) -> dict[str, Any]:
    """The `--json` line of one episode."""
    return {
        "env": env, "seed": episode.seed, "hinted": episode.hinted,
        "turns": [{"observation": t.observation, "reply": t.reply, "action": t.action, "reward": t.reward,
                   "terminated": t.terminated, "truncated": t.truncated, "tool_call": t.tool_call}
                  for t in episode.turns],
        "return": episode.ret, "success": episode.success, "terminated": episode.terminated,
        "truncated": episode.truncated, "failure": episode.failure, "failure_message": episode.failure_message,
        "format_failures": episode.format_failures, "tokens": episode.tokens,
    }


def _rule_in_force(path: Path) -> str:
    """How the file's replies are read: spadegym's rule or the reference's (read from the file, host-safe)."""
    from ..envfile import SourceError, read_source
    from ..envfile.reference import ACTION_RULES, action_format

    try:
        return ACTION_RULES[action_format(read_source(path), path.name)]
    except (SourceError, KeyError):
        return ""


def _indent(text: str) -> Padding:
    return Padding(Text(safe_text(text).rstrip() or "(empty)"), (0, 0, 0, 4))


def file_heading(console: Console, path: Path) -> None:
    """A rule naming the file; a path too long for the rule's title goes on its own line (a rule would cut it)."""
    title = escape(str(path))
    if len(str(path)) + 6 <= console.width:
        console.rule(f"[bold]{title}")
    else:
        console.rule()
        console.print(f"[bold]{title}")


def print_episode(console: Console, episode: Any, number: int, total: int, transcript: bool = True) -> None:
    arm = " · hint" if episode.hinted else ""
    console.rule(f"episode {number}/{total} · seed {episode.seed}{arm}")
    if transcript:
        for i, turn in enumerate(episode.turns, start=1):
            console.print(f"[bold]turn {i}[/] observation:")
            console.print(_indent(turn.observation))
            if turn.reply and turn.reply.strip() != f"\\boxed{{{turn.action}}}":
                console.print("  reply:")
                console.print(_indent(turn.reply))
            action = escape(safe_text(turn.action)) if turn.action is not None else "[red]none (no \\boxed{} found)[/]"
            tool = "   (tool call)" if turn.tool_call is not None else ""
            console.print(f"  action: {action}   reward: {turn.reward:g}{tool}")
        if episode.final_observation and episode.failure is None:
            console.print("[bold]final[/] observation:")
            console.print(_indent(episode.final_observation))
    if episode.failure:
        console.print(f"[red]failure: {episode.failure}[/] {escape(safe_text(episode.failure_message))}")
    else:
        end = "terminated" if episode.terminated else ("truncated" if episode.truncated else "stopped")
        color = "green" if episode.success else "yellow"
        console.print(f"[{color}]return {episode.ret:g}[/] · {end} after {len(episode.turns)} turns"
                      + (f" · {episode.format_failures} format failures" if episode.format_failures else ""))


def print_summary(console: Console, episodes: list[Any]) -> None:
    if not episodes:
        return
    scored = [e for e in episodes if e.scored]
    wins = sum(e.success for e in scored)
    mean = sum(e.ret for e in scored) / len(scored) if scored else 0.0
    unscored = [e for e in episodes if not e.scored]
    rate = f"{wins}/{len(scored)} ({wins / len(scored):.0%})" if scored else "n/a"
    console.rule()
    console.print(f"{len(episodes)} episodes · success {rate} · mean return {mean:.3f}"
                  + (f" · [red]{len(unscored)} not scored ({_failures(unscored)} failures)[/]" if unscored else ""))


@app.command("play")
def play(
    file: Path = typer.Argument(..., help="An environment file, or a directory of them (a pool, searched recursively)."),
    agent: str = typer.Option("random", "--agent", help=f"Agent: {AGENT_SPECS}."),
    episodes: int = typer.Option(1, "--episodes", min=1, help="Episodes to play; episode i uses seed S+i."),
    seed: int = typer.Option(0, "--seed", help="Seed of the first episode (fixes the instance)."),
    hint: str = typer.Option(None, "--hint", help="Play the hint arm with this hint text."),
    hinted: bool = typer.Option(False, "--hinted", help="Play the hint arm with the file's own hint."),
    max_turns: int = typer.Option(25, "--max-turns", min=1, help="Turn budget when the file declares no max_turns."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per episode instead of transcripts."),
    sets: list[str] = typer.Option(None, "--set", help=SET_HELP),
) -> None:
    """Play an environment (or every environment of a pool) in the sandbox and print each episode.

    Exit status 1 when every episode failed (the file does not load, or every
    episode ended in an environment or agent failure).

    Examples:

    \b
      spadegym play maze.py
      spadegym play maze.py --agent human --hinted
      spadegym play maze.py --agent openai:qwen3-8b@http://127.0.0.1:8000/v1 --episodes 8 --json
      spadegym play maze.py --agent scripted:moves.txt --seed 3
      spadegym play spade-pool/games/ --agent openai:qwen3-8b@http://127.0.0.1:8000/v1 --json
      spadegym play maze.py --agent hf:models/smollm2 --set train.max_seq_len=4096
    """
    from ..agents import AgentSpecError, PlayerQuit
    from ..agents.registry import AGENTS
    from ..loop.agent import build_agent
    from ..rollout.play import PlayFileError, play_file
    from ..rollout.runner import RolloutError

    console = cli_console()
    with user_errors():
        spec = AGENTS.parse(agent)  # the one reading of the spec: everything below reads its kind
    interactive = spec.kind == "human"
    from ..envfile import SourceError
    from ..validate.gate import expand_paths

    order = {}  # seed -> play index, so episodes print in play order whatever finishes first
    done: dict[int, Any] = {}
    printed: list[Any] = []
    current = {"file": file}

    def on_episode(episode: Any) -> None:
        done[order.get(episode.seed, len(done))] = episode
        while len(printed) - current["offset"] in done:
            ep = done.pop(len(printed) - current["offset"])
            printed.append(ep)
            if as_json:
                typer.echo(json.dumps(episode_json(ep, str(current["file"]))))
            else:
                if len(printed) - 1 == current["offset"]:  # the file loaded: say how its replies are read
                    console.print(escape(_rule_in_force(Path(current["file"]))))
                print_episode(console, ep, len(printed) - current["offset"], episodes, transcript=not interactive)

    order.update({seed + i: i for i in range(episodes)})
    unavailable: tuple[type[Exception], ...] = ()  # the openai client loads only for openai agents
    if spec.kind == "openai":
        from ..llm import LLMUnavailable

        unavailable = (LLMUnavailable,)
    with user_errors():
        try:
            files = expand_paths([file])
        except SourceError as exc:
            raise fail(str(exc), 1) from None
        try:
            player = build_agent(spec, seed=seed, **agent_options(spec, sets))
        except AgentSpecError as exc:
            raise UserError(str(exc)) from None

        async def main() -> None:
            try:
                for path in files:
                    current.update(file=path, offset=len(printed))
                    done.clear()
                    if len(files) > 1 and not as_json:
                        file_heading(console, path)
                    try:
                        await play_file(path, player, episodes=episodes, seed=seed, hint=hint, hinted=hinted,
                                        max_turns=max_turns, concurrency=1 if interactive else 16,
                                        on_episode=on_episode)
                    except PlayFileError as exc:
                        if len(files) == 1:
                            raise
                        err_console.print(f"{exc}", highlight=False)
            finally:
                await player.aclose()

        try:
            asyncio.run(main())
        except PlayFileError as exc:
            raise fail(str(exc), 1) from None
        except RolloutError as exc:
            raise UserError(str(exc)) from None
        except unavailable as exc:
            if not as_json:
                print_summary(console, printed)
            raise fail(str(exc), 1) from None
        except PlayerQuit:
            (err_console if as_json else console).print("input ended; stopping.")  # stdout stays JSON
            return
    if not as_json:
        print_summary(console, printed)
    if not printed or all(ep.failure is not None for ep in printed):
        raise fail(f"every episode failed ({_failures(printed)}); see the messages above.", 1)


def _failures(episodes: list[Any]) -> str:
    """The failure categories of episodes, counted: '3 exception, 1 timeout'."""
    counts: dict[str, int] = {}
    for ep in episodes:
        counts[ep.failure or "none"] = counts.get(ep.failure or "none", 0) + 1
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "no episode played"
