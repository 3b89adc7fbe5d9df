"""How the CLI turns user errors into one clear sentence (never a traceback)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.markup import escape

from ..errors import Interrupted, Terminated, UserError
from ..text import safe_text
from .console import cli_console

err_console = cli_console(stderr=True)

__all__ = ["UserError", "err_console", "fail", "is_llm_error", "user_errors"]


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {escape(safe_text(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def is_llm_error(exc: BaseException) -> bool:
    """An error from the model server (without importing the client when no LLM was used)."""
    client = sys.modules.get("spadegym.llm.client")
    return client is not None and isinstance(exc, client.LLMError)


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
            err_console.print("terminated" if isinstance(exc, Terminated) else "interrupted")
        sys.exit(getattr(exc, "status", 130))


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds the command as Ctrl-C does (``Terminated``), so it ends with one notice; a second SIGTERM
    during that unwinding is ignored, so that the notice and what is kept are not cut short."""

    def terminate(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
