"""Where agentgym-bench keeps what it builds: one home directory, ``$AGENTGYM_BENCH_HOME``.

``AGENTGYM_BENCH_HOME`` defaults to ``~/.cache/agentgym-bench``; models live in ``<home>/models/<name>``
(``default``: the freshly built local model, ``warmstart``: it after supervised warm start). The variable is read at
call time, so setting it in a running process (or a test) moves everything.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """``$AGENTGYM_BENCH_HOME`` (``~`` and variables expanded), or ``~/.cache/agentgym-bench``."""
    value = os.environ.get("AGENTGYM_BENCH_HOME")
    return expand(value) if value else Path.home() / ".cache" / "agentgym-bench"


def model_dir(name: str = "default") -> Path:
    """``<home>/models/<name>``."""
    return home() / "models" / name


def expand(path: str | os.PathLike) -> Path:
    """``path`` with ``~`` and ``$VARIABLES`` expanded."""
    return Path(os.path.expandvars(os.path.expanduser(os.fspath(path))))
