"""Command-line values checked where argparse parses them, so that a wrong one is refused naming its flag
(``argument --top-p: '0' is not a number > 0 and <= 1``).

- :func:`number_arg`: an int or float within bounds.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def number_arg(kind: type, low: float, *, above: bool = False, high: float | None = None, what: str = ""
               ) -> Callable[[str], Any]:
    """An argparse type: a ``kind`` (int or float) at least ``low`` (above it, with ``above``) and at most ``high``,
    so that a wrong value is refused naming its flag."""
    wanted = " and ".join(filter(None, [f"{'>' if above else '>='} {low}", high is not None and f"<= {high}"]))

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value != value or value < low or (above and value == low) or (
                high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what or kind.__name__} {wanted}")
        return value
    return parse
