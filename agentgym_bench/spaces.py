"""Text spaces shared by every environment in the package.

Every observation and action space is a :class:`gymnasium.spaces.Text` over :data:`CHARSET`: printable ASCII
(letters, digits, punctuation, space, tab and newlines) plus ``√``, the symbol RAGEN's Sokoban and FrozenLake grids
use for "box on target" / "player on goal". Text coming from elsewhere (a third-party env, a product page) goes through
:func:`sanitize` so that what flows through a space really is inside it.

The spaces are :class:`AgentText`, a ``Text`` subclass (``isinstance(space, Text)`` holds, and every Gymnasium space
utility treats it as ``Text``) that only adds working shared memory, so that ``gym.make_vec(id,
vectorization_mode="async")`` with its default ``shared_memory=True`` returns real observations. Gymnasium 1.4's own
``read_from_shared_memory`` for ``Text`` decodes the buffer into strings once, when ``AsyncVectorEnv`` is built (all
zeros then, i.e. ``CHARSET[0] * max_length``: ``'000...'``), and the vector env never reads it again.
"""

from __future__ import annotations

import multiprocessing
import string
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

CHARSET = string.printable + "√"
_ALLOWED = frozenset(CHARSET)


class AgentText(spaces.Text):
    """``gymnasium.spaces.Text`` with shared memory for ``AsyncVectorEnv`` that reads each observation when it is
    asked for, not once (see the module docstring). Constructed, compared, sampled and flattened exactly like
    ``Text``; build it with :func:`text_space`."""


def text_space(max_length: int) -> AgentText:
    """A ``Text`` space over :data:`CHARSET` that admits the empty string and strings up to ``max_length``."""
    return AgentText(max_length=max_length, min_length=0, charset=CHARSET)


def sanitize(text: str, max_length: int | None = None) -> str:
    """Map ``text`` into :data:`CHARSET`: unknown characters become ``?``; cut to ``max_length`` if given."""
    clean = text if _ALLOWED.issuperset(text) else "".join(c if c in _ALLOWED else "?" for c in text)
    return clean if max_length is None else clean[:max_length]


# Shared memory. The layout is Gymnasium's flattened Text (spaces.utils.flatten): one int32 row of ``max_length``
# per env, each character's index in ``space.character_list``, padded with ``len(character_list)``. All three of
# create, write and read are registered for AgentText, so our writer and reader agree whatever a later Gymnasium
# does to its own Text functions.


class SharedTextBatch(Sequence[str]):
    """The ``n`` observations in an ``AgentText`` shared-memory buffer, decoded on every access (the ``Text``
    counterpart of the NumPy view Gymnasium returns for a ``Box``). ``AsyncVectorEnv`` returns a ``deepcopy`` of
    it by default (``copy=True``): a plain tuple of strings, as in ``"sync"`` mode. With ``copy=False`` it is
    returned itself, and like a ``Box`` view it shows the next step's observations once that step is taken;
    ``tuple(batch)``, ``copy.copy`` and pickling all take a tuple snapshot."""

    def __init__(self, space: AgentText, rows: np.ndarray) -> None:
        self._rows = rows  # (n, max_length) int32, a view on the shared buffer
        self._chars = np.array(space.character_list, dtype=object)
        self._pad = len(space.character_list)

    def _decode(self, row: np.ndarray) -> str:
        return "".join(self._chars[row[row < self._pad]])

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._decode(row) for row in self._rows[index])
        return self._decode(self._rows[index])

    def __iter__(self) -> Iterator[str]:
        return (self._decode(row) for row in self._rows)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, SharedTextBatch) else other)

    __hash__ = None  # type: ignore[assignment]  # contents change with the buffer

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)


@create_shared_memory.register(AgentText)
def _create_agent_text_shared_memory(space: AgentText, n: int = 1, ctx: Any = multiprocessing) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


@write_to_shared_memory.register(AgentText)
def _write_agent_text_to_shared_memory(space: AgentText, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str) or len(value) > space.max_length:
        length = f" of length {len(value)}" if isinstance(value, str) else ""
        raise ValueError(f"observation is not a string of at most {space.max_length} characters: "
                         f"{type(value).__name__}{length}")
    outside = sorted(set(value) - space.character_set)
    if outside:
        raise ValueError(f"observation has characters outside its space's charset: {outside!r}")
    row = np.full(space.max_length, len(space.character_list), dtype=np.int32)
    row[:len(value)] = [space.character_index(c) for c in value]
    size = space.max_length
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size:(index + 1) * size], row)


@read_from_shared_memory.register(AgentText)
def _read_agent_text_from_shared_memory(space: AgentText, shared_memory: Any, n: int = 1) -> SharedTextBatch:
    rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length))
    return SharedTextBatch(space, rows)
