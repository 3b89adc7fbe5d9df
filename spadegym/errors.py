"""Errors a user can cause and fix; the CLI prints their message as one sentence."""


class UserError(Exception):
    """A problem the user can fix: the message says what went wrong and what to do."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C whose outcome the command has already told the user (what was kept, how to resume)."""
