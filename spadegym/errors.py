"""Errors a user can cause and fix; the CLI prints their message as one sentence."""

from pathlib import Path


class UserError(Exception):
    """A problem the user can fix: the message says what went wrong and what to do."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C whose outcome the command has already told the user (what was kept, how to resume)."""


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
