"""The command line's consoles.

Lines are never broken by the console itself (``soft_wrap``): a path or a command printed to a pipe or a file
stays on one line, so it can be copied or grepped; a terminal wraps long lines for the eye. Tables still fit
the console's width.
"""

from __future__ import annotations

from rich.console import Console


def cli_console(stderr: bool = False, **options: object) -> Console:
    """A console for the CLI's output (stdout, or stderr with ``stderr=True``)."""
    return Console(stderr=stderr, highlight=False, soft_wrap=True, **options)  # type: ignore[arg-type]
