"""A board folder's files: the names it may write, the gate of every path it touches, its lock, and the
all-or-nothing rename of a write into place.

A write (:func:`~agentgym_bench.leaderboard.board.write_board`) renders everything into a staging folder inside the
board, then :func:`rename_into_place` renames the files onto their places one by one, ``board.json`` last (the
commit point). Before the first rename it hard-links every file it will replace into the staging folder's ``undo/``
and writes the plan (``journal.json``), so a write stopped between two renames (killed, out of disk, interrupted)
is put back as it was: at once, if the writer itself sees the error, else by the next command that takes the lock
(:func:`locked` calls :func:`recover`). Without that, a replaced results file and the old index that still names its
predecessor's SHA-256 would make every later command refuse the board.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentgym_bench.errors import UserError
from agentgym_bench.files import write_atomic
from agentgym_bench.paths import BOARD_INDEX

INDEX, LOCK = BOARD_INDEX, ".lock"
LOCK_TIMEOUT = 600.0
MODELS = "models"
"""The folder of a board that holds its published models, one sub-folder per entry slug
(:mod:`~agentgym_bench.leaderboard.weights`)."""
OWN_FOLDERS = ("submissions", "transcripts", MODELS, "incoming")
"""The board's folders: what it stores, renders and publishes, and where pull requests add files."""
OWN_FILES = (INDEX, "README.md", "scores.png", "index.html", ".gitignore", LOCK)
"""The board's files (in its folder itself); ``submissions/`` and ``transcripts/`` hold one file per submission."""
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""What :func:`slugify` makes of a name with a letter or digit: the only file names the board writes or deletes in
``submissions/`` and ``transcripts/`` (with their suffix)."""
STAGING = ".staging-"
"""The prefix of a write's staging folder (``.staging-<pid>``), inside the board."""
JOURNAL, UNDO = "journal.json", "undo"


def slugify(name: str) -> str:
    """The file-name form of a submission name: lower case, runs of other characters as one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def board_path(folder: str | os.PathLike, *parts: str) -> Path:
    """``folder/parts...``, after checking that neither it nor a folder between ``folder`` and it is a symbolic link:
    the gate of every path a board writes, renames onto or deletes, so nothing is written or deleted outside the
    board (a link's target could be anywhere). ``folder`` itself may be a link (the user named it). Each part is one
    plain name. A :class:`UserError` names a link (the board left as it is)."""
    path = Path(folder)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\\" in part:
            raise UserError(f"board {folder}: {part!r} is not a file name of a board")
        path = path / part
        if path.is_symlink():
            raise UserError(f"board {folder}: {path} is a symbolic link (to {os.readlink(path)}); a board writes and "
                            "deletes only its own files and folders, never through a link: replace the link by the "
                            "folder or file itself")
    return path


def check_no_links(folder: Path) -> None:
    """Refuse (:class:`UserError`, one line naming it) a symbolic link among the board's folders and files
    (:data:`OWN_FOLDERS`, :data:`OWN_FILES`, the files of ``submissions/`` and ``transcripts/``): every command that
    reads a board calls this first (:func:`~agentgym_bench.leaderboard.board.read_index`), before anything is read,
    written or deleted."""
    for name in (*OWN_FOLDERS, *OWN_FILES):
        board_path(folder, name)
    for sub in ("submissions", "transcripts"):
        if (folder / sub).is_dir():
            for p in sorted((folder / sub).iterdir()):
                board_path(folder, sub, p.name)


@contextmanager
def locked(folder: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the board's exclusive lock (``folder/.lock``), waiting at most ``timeout`` seconds for it; a write that an
    earlier holder left half done is put back first (:func:`recover`)."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = board_path(folder, ".gitignore")
    if not ignore.exists():
        board_path(folder, f".{ignore.name}.tmp{os.getpid()}")  # write_atomic's temporary file
        write_atomic(ignore, f"{LOCK}\n{STAGING}*/\n".encode())
    lock = os.open(board_path(folder, LOCK), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    with open(lock, "a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise UserError(f"board {folder} stayed locked by another submit for {timeout:.0f}s") from None
                time.sleep(0.05)
        try:
            recover(folder)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def interrupted_writes(folder: Path) -> list[Path]:
    """The staging folders that writers stopped part way left in board ``folder`` (under the lock, every one is)."""
    return sorted(p for p in Path(folder).glob(f"{STAGING}*") if p.is_dir())


def recover(folder: Path) -> None:
    """Put back what each write stopped part way renamed (:func:`roll_back`) and delete its staging folder. Call it
    holding the lock: then no writer is alive to own one."""
    for staging in interrupted_writes(folder):
        roll_back(folder, board_path(folder, staging.name))
        shutil.rmtree(staging, ignore_errors=True)


def put_back_interrupted(folder: Path) -> None:
    """Put back the writes that were stopped part way in board ``folder``, if any, taking the lock to do it (what
    :func:`locked` does first), so that a command reading the board before it takes the lock reads it whole."""
    if interrupted_writes(folder):
        with locked(folder):
            pass


def rename_into_place(folder: Path, staging: Path, names: list[tuple[str, ...]]) -> None:
    """Rename each file ``staging/name...`` onto ``folder/name...`` (the staging folder mirrors the board's layout) in
    order, the last rename being the commit point, so that :func:`roll_back` can undo the renames before it: the files
    they replace are hard-linked into ``staging/undo/`` and the list written to ``staging/journal.json`` first. Every
    target passes :func:`board_path` before anything is renamed (a link refuses the whole write)."""
    targets = [board_path(folder, *name) for name in names]
    board_path(staging, UNDO).mkdir()
    for i, target in enumerate(targets):
        if target.exists():
            try:
                os.link(target, staging / UNDO / str(i))
            except OSError:  # a filesystem without hard links: a copy keeps the old bytes as well
                shutil.copy2(target, staging / UNDO / str(i))
    write_atomic(staging / JOURNAL, json.dumps([list(name) for name in names]).encode())
    for name, target in zip(names, targets, strict=True):
        os.replace(board_path(staging, *name), target)


def roll_back(folder: Path, staging: Path) -> None:
    """Undo the renames of ``staging``'s :func:`rename_into_place` if it stopped before its last one (else nothing is
    undone: the write is whole). Safe to repeat if itself stopped part way: each rename taken back returns its file to
    ``staging``, and each replaced file is put back from ``undo/``."""
    if not (staging / JOURNAL).is_file():
        return  # stopped before the first rename
    try:
        names = json.loads((staging / JOURNAL).read_text(encoding="utf-8"))
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, list) and n and all(isinstance(p, str) for p in n)
                                              for n in names):  # not what rename_into_place writes
        raise UserError(f"board {folder}: {staging / JOURNAL} is not a write's journal (a list of paths); remove "
                        f"{staging} if the board reads as it should")
    moves = [(board_path(staging, *name), board_path(folder, *name)) for name in names]
    if not moves or not moves[-1][0].exists():
        return  # the commit point was passed
    for i in reversed(range(len(moves))):
        source, target = moves[i]
        if not source.exists() and target.exists():
            os.replace(target, source)
        if (staging / UNDO / str(i)).exists():
            os.replace(staging / UNDO / str(i), target)
