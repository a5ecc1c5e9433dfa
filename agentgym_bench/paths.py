"""Where agentgym-bench keeps what it builds: one home directory, ``$AGENTGYM_BENCH_HOME``; and where a repository's
root is.

``AGENTGYM_BENCH_HOME`` defaults to ``~/.cache/agentgym-bench`` (``$XDG_CACHE_HOME/agentgym-bench`` where that is
set); models live in ``<home>/models/<name>`` (``default``: the freshly built local model, ``warmstart``: it after
supervised warm start). The variables are read at call time, so setting them in a running process (or a test) moves
everything.

A *repository* is a folder that holds a ``leaderboards/`` folder (a clone of agentgym-bench, or any folder laid out
like one): :func:`repository_root`. Results files name a model folder inside a repository by its path relative to
that root, so the name means the same folder in every clone; :func:`is_machine_path` tells the names that do not.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

from agentgym_bench import run_folder
from agentgym_bench.errors import UserError

BUILT_MODELS = {"default": "agentgym-bench init-model", "warmstart": "agentgym-bench warmstart"}
"""The model names this package builds under :func:`model_dir`, and the command that builds each."""
PUBLISHED_CHECKPOINT = "leaderboards/agentgym-v2/models/default-model-sft"
"""The published checkpoint, relative to a clone's root: the board's "default model + SFT", from which the main job's
RL starts (what a newcomer has after cloning, where ``default`` and ``warmstart`` are built only on request)."""
BOARD_INDEX = "board.json"
"""A board folder's index of its entries (``leaderboards/<board>/board.json``, written by
:mod:`agentgym_bench.leaderboard.board`); a published model folder's entry is read from it."""


def home() -> Path:
    """``$AGENTGYM_BENCH_HOME`` (``~`` and variables expanded), or ``agentgym-bench`` in the user's cache folder:
    ``$XDG_CACHE_HOME`` where set (the XDG base-directory rule, which Hugging Face's cache follows too), else
    ``~/.cache``."""
    value = os.environ.get("AGENTGYM_BENCH_HOME")
    if value:
        return expand(value)
    cache = os.environ.get("XDG_CACHE_HOME")
    return (expand(cache) if cache else Path.home() / ".cache") / "agentgym-bench"


def model_dir(name: str = "default") -> Path:
    """``<home>/models/<name>``."""
    return home() / "models" / name


def expand(path: str | os.PathLike) -> Path:
    """``path`` with ``~`` and ``$VARIABLES`` expanded."""
    return Path(os.path.expandvars(os.path.expanduser(os.fspath(path))))


def repository_root(start: str | os.PathLike) -> Path | None:
    """The nearest of ``start`` and its parents (absolute, symbolic links resolved) that holds a ``leaderboards/``
    folder; ``None`` if none does."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / "leaderboards").is_dir():
            return candidate
    return None


def default_board(suite_name: str, start: str | os.PathLike = ".") -> Path:
    """``leaderboards/<suite_name>`` of the repository ``start`` is in (:func:`repository_root`), the default
    ``--board`` of the commands that use one (relative when ``start`` is the root, as it was typed there).

    Raises:
        UserError: ``start`` is in no repository: a board would be made in a folder nobody meant.
    """
    root = repository_root(start)
    if root is None:
        raise UserError(f"no leaderboards/ folder in {Path(start).resolve()} or above it (this is not a clone of "
                        "agentgym-bench): give --board FOLDER")
    board = root / "leaderboards" / suite_name
    return board.relative_to(Path(start).resolve()) if root == Path(start).resolve() else board


def enclosing_board(folder: str | os.PathLike) -> Path | None:
    """The board a folder lies inside (a folder above it holding ``board.json``), or ``None``: ``--board
    leaderboards/X/submissions`` would otherwise start a second board inside the first."""
    for parent in Path(folder).resolve().parents:
        if (parent / "board.json").is_file():
            return parent
    return None


def published_board(folder: str | os.PathLike) -> bool:
    """Whether a board folder is a repository's published board: it sits in a ``leaderboards/`` folder."""
    return Path(folder).resolve().parent.name == "leaderboards"


def is_machine_path(name: str) -> bool:
    """Whether a model name only means something on one machine: an absolute path (``/...``, ``C:\\...``, ``\\...``),
    or one that holds ``~``, ``$`` or a ``..`` part (it leaves the folder it is relative to)."""
    parts = name.replace("\\", "/").split("/")
    return (name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", name) is not None or "~" in name
            or "$" in name or ".." in parts)


def looks_like_path(name_or_path: str) -> bool:
    """Whether a model argument can only mean a local folder, never a hub id (``org/name``).

    True for absolute paths, ``~...``, ``$VAR...``, ``./`` or ``../`` prefixes, a trailing ``/``, a backslash, or more
    than one ``/`` (hub ids have exactly one).
    """
    return (name_or_path.startswith(("/", "~", "$", "./", "../")) or name_or_path in (".", "..")
            or name_or_path.endswith("/") or "\\" in name_or_path or name_or_path.count("/") > 1)


def resolve_model(name_or_path: str | os.PathLike) -> str:
    """Where to load a model from: a local folder, or a Hugging Face hub id passed through unchanged.

    1. ``~`` and ``$VARIABLES`` are expanded; an existing folder is returned.
    2. A bare name (no ``/``) with a folder at :func:`model_dir` ``(name)`` resolves there: ``"warmstart"`` is
       ``$AGENTGYM_BENCH_HOME/models/warmstart``.
    3. A name this package builds (``default``, ``warmstart``) that is not built yet, or a string that can only be a
       local path (:func:`looks_like_path`) and does not exist, is a :class:`UserError` saying what to run.
    4. A bare name close to a local one (``warmstrat``: :func:`closest_local_name`) is a :class:`UserError`
       suggesting it.
    5. Anything else (``Qwen/Qwen2.5-0.5B-Instruct``, ``gpt2``) is a hub id: :func:`hub_model` (returned as given
       when the hub answers, else its folder in the local hub cache, else a :class:`UserError` at once).

    Raises:
        UserError: as in 3 to 5, or an empty string.
    """
    text = os.fspath(name_or_path)
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"model {name_or_path!r}: give a model folder, a name under {home() / 'models'} "
                        "or a Hugging Face hub id")
    local = expand(text)
    if local.is_dir():
        return _model_of(local)
    if "/" not in text and model_dir(text).is_dir():
        return _model_of(model_dir(text))
    if text in BUILT_MODELS:
        raise UserError(f"no model {text!r} at {model_dir(text)}: build it with `{BUILT_MODELS[text]}` "
                        f"(AGENTGYM_BENCH_HOME moves the folder){published_hint()}")
    if looks_like_path(text) or (text.count("/") == 1 and Path(text.split("/")[0]).is_dir()):
        raise UserError(f"no model folder at {local}{_near(local)}: give an existing folder or hub id"
                        f"{published_hint()}, or build "
                        "the default model with `agentgym-bench init-model` and warm-start it with `agentgym-bench "
                        "warmstart`")
    close = closest_local_name(text)
    if close is not None:
        where = model_dir(close) if model_dir(close).is_dir() else f"not built yet: `{BUILT_MODELS[close]}`"
        raise UserError(f"no model {text!r}: did you mean {close!r} ({where})? Local models: "
                        f"{', '.join(local_model_names()) or 'none'}; a hub model is named ORG/NAME")
    return hub_model(text)


def _model_of(folder: Path) -> str:
    """``folder``; for a trainer's checkpoint (``checkpoint-N/``) its ``actor/``; for a trainer run folder
    (:func:`~agentgym_bench.run_folder.is_run_folder`) its last complete checkpoint's actor
    (:func:`~agentgym_bench.run_folder.final_actor`)."""
    if not (folder / "config.json").is_file() and (folder / "actor" / "config.json").is_file():
        return str(folder / "actor")
    return str(run_folder.final_actor(folder)) if run_folder.is_run_folder(folder) else str(folder)


def _near(missing: Path) -> str:
    """What is there instead of the missing folder ``missing``, for its error: the trainer run it lies inside (whose
    model is its last checkpoint's actor), or the closest name beside it (``runs/kil2``: ``runs/kill2``)."""
    for above in missing.parents:
        if above.is_dir():
            if (above / "actor").is_dir():
                return f" ({above} is a trainer's checkpoint: its model is {above / 'actor'})"
            if run_folder.is_run_folder(above):
                return (f" ({above} is a trainer run: give the run, which loads its last checkpoint's model, or "
                        f"{above}/checkpoint-N/actor)")
            if above == missing.parent:
                close = difflib.get_close_matches(missing.name, [p.name for p in above.iterdir() if p.is_dir()], n=1)
                return f" (did you mean {above / close[0]}?)" if close else ""
            return ""
    return ""


def published_checkpoint(start: str | os.PathLike = ".") -> Path | None:
    """The published checkpoint (:data:`PUBLISHED_CHECKPOINT`) of the clone ``start`` is in, relative when ``start``
    is the clone's root; ``None`` outside a clone or where it is missing."""
    root = repository_root(start)
    if root is None or not (root / PUBLISHED_CHECKPOINT).is_dir():
        return None
    return Path(PUBLISHED_CHECKPOINT) if root == Path(start).resolve() else root / PUBLISHED_CHECKPOINT


def published_hint() -> str:
    """``"; or use the published checkpoint: PATH"`` where this clone has one (:func:`published_checkpoint`); outside
    a clone, where it is (it ships with the repository, not with the package); else ``""``: the model a newcomer has,
    for messages about models that are not there."""
    path = published_checkpoint()
    if path is None and repository_root(".") is None:
        return (f"; the published checkpoint ({PUBLISHED_CHECKPOINT}) comes with a clone of the repository, not with "
                "the pip package: run from a clone to use it")
    return f"; or use the published checkpoint (the board's default model + SFT): {path}" if path else ""


def local_model_names() -> list[str]:
    """The models built under :func:`model_dir` here, sorted: the names a bare model name finds."""
    folder = home() / "models"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def closest_local_name(name: str) -> str | None:
    """The local model name (:func:`local_model_names`) or name this package builds (:data:`BUILT_MODELS`, built or
    not) that ``name`` looks like a typo of, or ``None``; only bare names (no ``/``) are compared, as hub ids of an
    organisation are never local."""
    if "/" in name:
        return None
    close = difflib.get_close_matches(name, sorted({*local_model_names(), *BUILT_MODELS}), n=1, cutoff=0.75)
    return close[0] if close else None


HUB_SECONDS = 5.0
"""How long :func:`hub_reachable` waits for the Hugging Face hub to answer."""


def hub_endpoint() -> str:
    """The Hugging Face hub's address: ``$HF_ENDPOINT`` or ``https://huggingface.co``."""
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"


@functools.lru_cache(maxsize=8)
def hub_reachable(endpoint: str) -> bool:
    """Whether ``endpoint`` answers an HTTP request within :data:`HUB_SECONDS` (any status counts: the hub is
    there); asked once per process."""
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=HUB_SECONDS):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def hub_offline() -> bool:
    """Whether the user asked Hugging Face libraries to stay offline (``HF_HUB_OFFLINE`` or
    ``TRANSFORMERS_OFFLINE`` set to 1, true, yes or on)."""
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_model(repo_id: str) -> str:
    """What to load for a hub id: the id itself when the hub can be reached (transformers downloads or uses its
    cache), else the folder of the id's snapshot in the local hub cache, so nothing waits on retries to an
    unreachable hub; a :class:`UserError` at once if it is not cached either."""
    if not hub_offline() and hub_reachable(hub_endpoint()):
        return repo_id
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(repo_id, local_files_only=True)
    except Exception:  # noqa: BLE001 - huggingface_hub: not cached, malformed id, ...: all mean "not here"
        why = ("HF_HUB_OFFLINE is set" if hub_offline()
               else f"the Hugging Face hub ({hub_endpoint()}) cannot be reached")
        names = local_model_names()
        held = f"which holds {', '.join(names)}" if names else "which holds none"
        raise UserError(f"no model {repo_id!r}: not a folder, not a model under {home() / 'models'} "
                        f"({held}), not in the local hub cache, and {why}; give a model "
                        "folder, or build one with `agentgym-bench init-model`") from None
