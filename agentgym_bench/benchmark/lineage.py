"""What the model a trainer run started from was trained on: the ``started_from`` of a results file's trainer record.

A reference trainer's config names its start model (``pretrain``), not that model's own training. ``eval
--trained-by RUN`` adds it (:func:`with_start`), so that a board's "Trained on" is the union of the run's envs and its
start's (:func:`agentgym_bench.leaderboard.render.trained_on` walks ``started_from``). The start's record is found,
in this order, from what the start folder is:

- a warm-start output folder: its ``warmstart.json`` (the warm start's config, each earlier stage nested under its
  own ``started_from``);
- a trainer run folder, or a checkpoint's ``actor/`` inside one (``checkpoint-N/actor``): that run's config, with its
  own start added the same way;
- a board's published model folder (``leaderboards/<board>/models/<slug>``, which holds weights and tokenizer only):
  the trainer config of the board's entry that names that folder as its model, with the same weights hash.

A start found none of these ways (a hub id, a folder without a record) leaves the record as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentgym_bench import run_folder

MAX_DEPTH = 8
"""Most starts followed (a run from a run from a run ...), so a loop of folders cannot recurse forever."""


def with_start(trainer: dict[str, Any], folder: str | os.PathLike, root: str | os.PathLike | None = None
               ) -> dict[str, Any]:
    """``trainer``, the record :func:`~agentgym_bench.benchmark.provenance.training_record` made of the trainer run
    ``folder``, with ``config.started_from`` set to the trainer config of the model its ``pretrain`` names, when
    that is found (module docstring; ``pretrain`` as the run's ``config.yaml`` has it, before this machine's paths are
    hidden; a relative one resolves under ``root``, default the current directory); paths of this machine in it are
    hidden as in the rest of the record."""
    config = trainer.get("config")
    if not isinstance(config, dict) or "started_from" in config or "pretrain" not in config:
        return trainer
    pretrain = _raw_pretrain(Path(folder))
    start = start_config(pretrain, root) if pretrain else None
    if start is None:
        return trainer
    from agentgym_bench.benchmark.provenance import local_paths_hidden

    return {**trainer, "config": {**config, "started_from": local_paths_hidden(start)}}


def _raw_pretrain(folder: Path) -> str | None:
    import yaml

    try:
        config = run_folder.read_config(folder)
    except (OSError, yaml.YAMLError):
        return None
    pretrain = config.get("pretrain") if isinstance(config, dict) else None
    return pretrain if isinstance(pretrain, str) else None


def start_config(model: str, root: str | os.PathLike | None = None, depth: int = 0) -> dict[str, Any] | None:
    """The trainer config that made the model folder ``model`` (see the module docstring), or ``None``."""
    from agentgym_bench.rollout.specs import locate_model

    if depth >= MAX_DEPTH:
        return None
    found = locate_model(model, root)
    folder = Path(found) if found else Path(root if root is not None else Path.cwd()) / model
    if not folder.is_dir():
        return None
    folder = folder.resolve()
    if (folder / "warmstart.json").is_file():
        from agentgym_bench.benchmark.provenance import warmstart_record

        return warmstart_record(json.loads((folder / "warmstart.json").read_text()))[0]["config"]
    run = next((f for f in (folder, folder.parent.parent) if (f / run_folder.CONFIG).is_file()
                and (f == folder or (folder.name == "actor" and folder.parent.name.startswith("checkpoint-")))), None)
    if run is not None:
        from agentgym_bench.benchmark.provenance import training_record

        config = training_record(run)[0]["config"]
        pretrain = _raw_pretrain(run)
        earlier = start_config(pretrain, root, depth + 1) if pretrain else None
        return {**config, "started_from": earlier} if earlier is not None and "started_from" not in config else config
    entry = published_entry(folder)
    return None if entry is None else entry["trainer_config"]


def published_entry(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The board record (``board.json``) of the entry whose published model is ``folder``
    (``leaderboards/<board>/models/<slug>``, same name and weights hash) and that carries a trainer config, or
    ``None``."""
    from agentgym_bench.leaderboard.board import INDEX
    from agentgym_bench.rollout.specs import model_sha256

    folder = Path(folder).resolve()
    board = folder.parent.parent
    if folder.parent.name != "models" or not (board / INDEX).is_file():
        return None
    try:
        index = json.loads((board / INDEX).read_text())
    except ValueError:
        return None
    digest = model_sha256(folder)
    for record in index.get("submissions", []) if isinstance(index, dict) else []:
        if (isinstance(record, dict) and digest is not None and record.get("model_sha256") == digest
                and isinstance(record.get("model"), str) and Path(record["model"]).name == folder.name
                and isinstance(record.get("trainer_config"), dict)):
            return record
    return None
