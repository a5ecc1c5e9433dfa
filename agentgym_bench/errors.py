"""Errors a user can fix by changing what they typed or wrote.

The command line prints a :class:`UserError` as one line (``agentgym-bench: error: ...``) and exits with code 2;
anything else is a bug and keeps its traceback. Raise it (or a subclass) with a message that says what was wrong
and what to do.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: arguments, a config or results file, a path that does not exist."""
