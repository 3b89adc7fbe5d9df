"""Errors a user can cause and fix; the CLI prints their message as one sentence."""

from pathlib import Path


class UserError(Exception):
    """A problem the user can fix: the message says what went wrong and what to do."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C or SIGTERM whose outcome the command has already told the user (what was kept, how to resume);
    ``status`` is the exit status it ends the process with (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, status: int = 130):
        super().__init__()
        self.status = status


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job scheduler, ``kill``) in a command that unwinds it as it does Ctrl-C; the exit status is 143."""

    status = 143


def install_hint(extra: str) -> str:
    """The command that installs one of spadegym's extras here: from the checkout spadegym runs from (it is
    installed from one), by name only where it is not.

    >>> install_hint("openenv").startswith("pip install ")
    True
    """
    checkout = Path(__file__).resolve().parent.parent
    if not (checkout / "pyproject.toml").is_file():
        return f"pip install 'spadegym[{extra}]'"
    where = "." if checkout == Path.cwd().resolve() else str(checkout)
    return f'pip install -e "{where}[{extra}]"'
