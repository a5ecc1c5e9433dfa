"""Files written whole: a reader, or a writer killed half-way, finds each file old or new, never half written.

- :func:`write_atomic`: one file, through a temporary file and a rename;
- :func:`move_into`: a folder's files (a model just saved) moved over another folder's;
- :func:`usual_modes`: a folder's modes set as the user's umask says (writers that make temporary files, as
  safetensors does, leave them readable by their owner only).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (parent folders made) through a temporary file and a rename, so a reader or a
    killed writer never leaves half a file; returns ``path``. A write that fails (a full disk) removes its temporary
    file and raises the :class:`OSError` with ``path`` as its file name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(path)) from err
    os.replace(tmp, path)
    return path


def usual_modes(folder: Path) -> Path:
    """Give ``folder``, and every folder and file in it, the mode a plain ``open``/``mkdir`` would: ``0o666`` (files)
    or ``0o777`` (folders) less the process's umask; returns ``folder``. safetensors 0.8 writes its files ``0o600``
    and :func:`tempfile.mkdtemp` makes ``0o700`` folders, so a model saved through either is readable by its owner
    only, whatever the umask."""
    umask = os.umask(0o022)  # the only portable way to read it; set back at once
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)
    return folder


def move_into(source: Path, target: Path) -> Path:
    """Move the files of folder ``source`` into folder ``target`` and remove ``source``; returns ``target``. A missing
    or empty ``target`` becomes ``source`` by one rename (a killed mover leaves the old folder or the whole new one);
    otherwise each file is renamed over its namesake, so a reader or a killed mover finds every file whole, old or
    new, never half written. ``source`` must be on ``target``'s filesystem (a sibling, or inside it). What is moved
    gets :func:`usual_modes`."""
    usual_modes(source)
    if not target.exists() or (target.is_dir() and not any(target.iterdir())):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        return target
    for path in sorted(source.iterdir()):
        os.replace(path, target / path.name)
    source.rmdir()
    return target
