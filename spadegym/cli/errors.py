"""How the CLI turns user errors into one clear sentence (never a traceback)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

err_console = Console(stderr=True)


class UserError(Exception):
    """A problem the user can fix: the message is one sentence saying what and how."""


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Report UserError (and friends) as one line and exit 2."""
    from ..envfile import SourceError
    from ..sandbox import SandboxError

    try:
        yield
    except (UserError, SourceError, SandboxError) as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
