"""How the CLI turns user errors into one clear sentence (never a traceback)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.markup import escape

from ..errors import Interrupted, UserError
from ..text import safe_text
from .console import cli_console

err_console = cli_console(stderr=True)

__all__ = ["UserError", "err_console", "fail", "user_errors"]


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {escape(safe_text(message))}", highlight=False, soft_wrap=True)
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
    except KeyboardInterrupt as exc:
        if not isinstance(exc, Interrupted):  # an Interrupted has said what it kept already
            err_console.print("interrupted")
        sys.exit(130)
