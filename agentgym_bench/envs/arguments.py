"""Checks of constructor arguments, shared by the games and the agent wrapper.

Each returns the value converted to a plain Python type or raises ``ValueError`` naming the argument, the value and
what was expected. ``bool`` is not accepted as a number (``True`` is an ``int`` in Python, but ``num_boxes=True`` is
a mistake), and numbers must be finite.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def integer(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]`` (either bound optional); Python and numpy integers only."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r} must be an integer{_range(low, high)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name}={value!r} must be an integer{_range(low, high)}")
    return int(value)


def number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a finite ``float`` between ``low`` and ``high`` (inclusive unless ``low_open`` / ``high_open``)."""
    expected = "a finite number"
    if low is not None or high is not None:
        left = "(-inf" if low is None else ("(" if low_open else "[") + f"{low:g}"
        right = "inf)" if high is None else f"{high:g}" + (")" if high_open else "]")
        expected += f" in {left}, {right}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be {expected}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name}={value!r} must be {expected}")
    if high is not None and (value >= high if high_open else value > high):
        raise ValueError(f"{name}={value!r} must be {expected}")
    return float(value)


def boolean(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False`` (numpy's ``bool_`` too); strings such as ``"no"`` are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} must be True or False")
    return bool(value)


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f" in [{low}, {high}]"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""
