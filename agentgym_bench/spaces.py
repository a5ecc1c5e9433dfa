"""Text spaces shared by every environment in the package.

Every observation and action space is a :class:`gymnasium.spaces.Text` over :data:`CHARSET`: printable ASCII
(letters, digits, punctuation, space, tab and newlines) plus ``√``, the symbol RAGEN's Sokoban and FrozenLake grids
use for "box on target" / "player on goal". Text coming from elsewhere (a third-party env, a product page) goes through
:func:`sanitize` so that what flows through a space really is inside it.
"""

from __future__ import annotations

import string

from gymnasium import spaces

CHARSET = string.printable + "√"
_ALLOWED = frozenset(CHARSET)


def text_space(max_length: int) -> spaces.Text:
    """A ``Text`` space over :data:`CHARSET` that admits the empty string and strings up to ``max_length``."""
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def sanitize(text: str, max_length: int | None = None) -> str:
    """Map ``text`` into :data:`CHARSET`: unknown characters become ``?``; cut to ``max_length`` if given."""
    clean = text if _ALLOWED.issuperset(text) else "".join(c if c in _ALLOWED else "?" for c in text)
    return clean if max_length is None else clean[:max_length]
