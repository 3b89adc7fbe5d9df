"""The `spadegym` command line: one thin module per command.

Each module in ``COMMANDS`` defines a function registered on ``app`` that calls
the public library function of the same name.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal

# numpy's OpenBLAS runs on one thread unless the user sets a count (set before numpy loads it), because the
# command's matrices are small and a second BLAS thread only spins on a core the sandbox's workers need, for the
# same result to the last bit; torch (hf: roles) keeps its own threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import typer  # noqa: E402 - after the BLAS threads are set

app = typer.Typer(
    name="spadegym",
    help="Self-play in adaptive synthetic executable environments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Command modules, in the order `spadegym --help` lists them.
COMMANDS = ("run", "validate", "play", "learn", "design", "families", "new", "report", "export", "redteam", "eval",
            "doctor", "serve", "curriculum", "import", "models")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"spadegym {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Self-play in adaptive synthetic executable environments."""


def _register() -> None:
    for name in COMMANDS:
        try:
            importlib.import_module(f"spadegym.cli.{name}_cmd")
        except ModuleNotFoundError as exc:
            if exc.name != f"spadegym.cli.{name}_cmd":
                raise


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    # SIGTERM (a job scheduler, `kill`) unwinds like Ctrl-C: sandboxes and stores close on the way out.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _register()
    # What is imported by now lives as long as the process: frozen, the collector stops re-walking
    # it, which is measurable in LLM rollouts where each request allocates many small objects.
    gc.freeze()
    app()
