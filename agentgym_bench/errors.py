"""Errors a user can fix by changing what they typed or wrote.

The command line prints a :class:`UserError` as one line (``agentgym-bench: error: ...``) and exits with code 2;
anything else is a bug and keeps its traceback. Raise it (or a subclass) with a message that says what was wrong
and what to do.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: arguments, a config or results file, a path that does not exist."""


def install_command(extra: str) -> str:
    """How to install the optional ``extra`` of the package, for a pip user and in a clone."""
    return f"pip install 'agentgym-bench[{extra}]' (in a clone: pip install -e '.[{extra}]')"


class MissingExtra(UserError, ImportError):
    """An optional dependency that is not installed: one line naming the extra that brings it
    (:func:`install_command`), and an :class:`ImportError` to code that catches one."""

    def __init__(self, what: str, extra: str):
        super().__init__(f"{what}; install it with {install_command(extra)}")
