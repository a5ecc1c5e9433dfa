"""Where a model came from: the ``metadata.trainer`` and ``metadata.compute.training`` records of a results file.

A reference-trainer run folder holds ``config.yaml`` (the resolved config) and, once finished, ``summary.json``; a
warm-start folder holds ``warmstart.json`` (its config and timings). :func:`training_record` reads either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agentgym_bench.errors import UserError


def training_record(folder: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(trainer, training_compute)`` of a trainer run folder or a warm-start model folder."""
    path = Path(folder)
    if (path / "config.yaml").is_file():
        config = yaml.safe_load((path / "config.yaml").read_text()) or {}
        summary = json.loads((path / "summary.json").read_text()) if (path / "summary.json").is_file() else {}
        algorithm = config.get("preset") or config.get("adv_estimator") or "unknown"
        steps = config.get("max_steps")
        batch = config.get("rollout_batch_size")
        compute = {"steps": steps, "episodes": steps * batch if steps and batch else None,
                   "wall_time_s": summary.get("wall_time_s")}
        return {"algorithm": str(algorithm), "config": config}, compute
    if (path / "warmstart.json").is_file():
        report = json.loads((path / "warmstart.json").read_text())
        compute = {"steps": report.get("train", {}).get("steps"),
                   "demonstration_episodes": report.get("demonstrations", {}).get("episodes"),
                   "wall_time_s": report.get("seconds")}
        return {"algorithm": "sft-warmstart", "config": report.get("config", {})}, compute
    raise UserError(f"{path} is neither a trainer run folder (config.yaml) nor a warm-start folder (warmstart.json)")


def final_checkpoint(run: str | Path) -> Path:
    """The actor of the last complete checkpoint of a trainer run folder."""
    found = sorted((int(p.name.split("-")[1]), p) for p in Path(run).glob("checkpoint-*")
                   if p.name.split("-")[1].isdigit() and (p / "actor" / "config.json").is_file())
    if not found:
        raise UserError(f"{run} has no complete checkpoint-N/actor")
    return found[-1][1] / "actor"
