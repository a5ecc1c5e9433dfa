"""Files written whole (agentgym_bench/files.py): a reader, or a writer killed half-way, finds each file old or new.
The kills themselves are in the trainers' tests (tests/trainers/test_train.py, test_warmstart.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentgym_bench.files import move_into, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = write_atomic(tmp_path / "a" / "summary.json", b"old")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and [p.name for p in path.parent.iterdir()] == ["summary.json"]


def test_move_into_a_missing_or_empty_folder_renames_it_whole(tmp_path):
    for target in (tmp_path / "missing", tmp_path / "empty"):
        if target.name == "empty":
            target.mkdir()
        source = tmp_path / f".{target.name}.new"
        source.mkdir()
        (source / "config.json").write_text("{}")
        (source / "model.safetensors").write_bytes(b"w")
        assert move_into(source, target) == target and not source.exists()
        assert sorted(p.name for p in target.iterdir()) == ["config.json", "model.safetensors"]


def test_move_into_a_model_folder_replaces_its_files_and_keeps_the_rest(tmp_path):
    """A warm-start stage that writes over the model it started from: its run files stay beside the new model."""
    target, source = tmp_path / "warmstart", tmp_path / "warmstart" / ".model-new"
    source.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"old weights")
    (target / "metrics.jsonl").write_text("{}\n")
    (source / "model.safetensors").write_bytes(b"new weights")
    move_into(source, target)
    assert (target / "model.safetensors").read_bytes() == b"new weights" and (target / "metrics.jsonl").is_file()
    assert sorted(p.name for p in target.iterdir()) == ["metrics.jsonl", "model.safetensors"]


def test_a_moved_model_gets_the_users_umask_not_its_writers_private_modes(tmp_path):
    """safetensors 0.8 writes its files 0o600 and mkdtemp makes 0o700 folders; moved into place, a model is
    readable as the umask says (0o022 here: 0o644 files, 0o755 folders; 0o077: private again)."""
    import tempfile

    import torch
    from safetensors.torch import save_file

    old = os.umask(0o022)
    try:
        for umask, file_mode, folder_mode in ((0o022, 0o644, 0o755), (0o077, 0o600, 0o700)):
            os.umask(umask)
            staged = Path(tempfile.mkdtemp(dir=tmp_path))
            (staged / "sub").mkdir()
            save_file({"w": torch.zeros(2)}, str(staged / "sub" / "model.safetensors"))
            (staged / "config.json").write_text("{}")
            target = move_into(staged, tmp_path / f"model-{umask:o}")
            assert stat.S_IMODE(target.stat().st_mode) == folder_mode
            assert stat.S_IMODE((target / "sub").stat().st_mode) == folder_mode
            assert {stat.S_IMODE(p.stat().st_mode) for p in target.rglob("*") if p.is_file()} == {file_mode}
    finally:
        os.umask(old)
