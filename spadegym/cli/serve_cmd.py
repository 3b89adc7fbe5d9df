"""`spadegym serve`: a pool or a live run as an OpenEnv environment server."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import install_hint
from . import app
from .errors import UserError, err_console, user_errors


@app.command("serve")
def serve(
    source: Path = typer.Argument(..., help="An environment file, a folder of them (a pool), or a run directory (live)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8001, "--port", min=1, max=65535, help="Port to listen on (8001: model servers such as vLLM take 8000)."),
    max_sessions: int = typer.Option(256, "--max-sessions", min=1, help="Concurrent WebSocket sessions (each one sandbox worker)."),
    hinted: bool = typer.Option(False, "--hinted", help="Serve the hint arm: the hint line in each first observation."),
    rewards: str = typer.Option("step", "--rewards", help="step: each step pays the level's own reward; return: 0 until the last step, which pays the episode's return (spadegym's return is the terminal reward, not a sum)."),
    idle_timeout: float = typer.Option(300.0, "--idle-timeout", min=1.0, help="Seconds a session may send nothing before it is ended and its worker freed."),
    package: Path = typer.Option(None, "--package", help="Serve nothing: write the levels as an OpenEnv package into this new folder (openenv.yaml, server/app.py, Dockerfile) for openenv build and push."),
    name: str = typer.Option("spadegym-pool", "--name", help="The OpenEnv environment's name, with --package."),
) -> None:
    """Serve levels to OpenEnv and TRL clients (OpenEnv's HTTP and WebSocket API).

    Each WebSocket session plays one level at a time in a sandbox worker; reset
    takes seed and optionally level_id. Needs the openenv extra.

    Examples:

    \b
      spadegym serve pool/ --port 8001
      spadegym serve runs/run-2026-01-01-1200 --max-sessions 512
      spadegym serve pool/ --package my-env --name my-env
    """
    with user_errors():
        from ..adapters import open_levels

        levels = open_levels(source)
        if package is not None:  # a package is written, not served: OpenEnv is the package's, not needed here
            from ..adapters.openenv_package import write_package

            written = write_package(levels, package, name)
            err_console.print(f"wrote the OpenEnv package of {len(levels.levels())} level(s) to {written}; run "
                              "`uv lock` there, then `openenv build` and `openenv push`", highlight=False)
            return
        try:
            from ..adapters.openenv_server import serve as run_server
        except ImportError as exc:
            raise UserError(f"spadegym serve needs OpenEnv ({exc}); install it with {install_hint('openenv')}.") from None
        from ..adapters.rewards import reward_mode

        try:
            mode = reward_mode(rewards)
        except ValueError as exc:
            raise UserError(f"--rewards: {exc}.") from None
        count = len(levels.levels())
        err_console.print(f"serving {count} level(s) from {source} on http://{host}:{port} "
                          f"(WebSocket /ws, up to {max_sessions} sessions)", highlight=False)
        run_server(levels, host=host, port=port, max_sessions=max_sessions, hinted=hinted, rewards=mode,
                   idle_timeout_s=idle_timeout)
