"""Where agentgym-bench keeps what it builds: one home directory, ``$AGENTGYM_BENCH_HOME``.

``AGENTGYM_BENCH_HOME`` defaults to ``~/.cache/agentgym-bench``; models live in ``<home>/models/<name>``
(``default``: the freshly built local model, ``warmstart``: it after supervised warm start). The variable is read at
call time, so setting it in a running process (or a test) moves everything.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentgym_bench.errors import UserError


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


def looks_like_path(text: str) -> bool:
    """``text`` can only mean a local path: absolute, ``~``/``$``/``.`` at the start, or a Windows-style drive."""
    return text.startswith(("/", "~", "$", "./", "../", ".\\")) or (len(text) > 1 and text[1] == ":")


def resolve_model(name_or_path: str | os.PathLike) -> str:
    """Where to load a model from.

    ``~`` and ``$VARIABLES`` are expanded and an existing folder is returned; a bare name with a folder at
    :func:`model_dir` ``(name)`` resolves there (``"warmstart"``); a string that looks like a local path
    (:func:`looks_like_path`) but does not exist is a :class:`UserError`; anything else passes through as a
    Hugging Face hub id (``Qwen/Qwen2.5-0.5B-Instruct``).
    """
    text = os.fspath(name_or_path)
    local = expand(text)
    if local.is_dir():
        return str(local)
    if "/" not in text and text and model_dir(text).is_dir():
        return str(model_dir(text))
    if not text.strip() or looks_like_path(text):
        raise UserError(f"no model folder at {local}: build the default model with `agentgym-bench init-model` "
                        "and warm-start it with `agentgym-bench warmstart`, or give an existing folder or hub id")
    return text
