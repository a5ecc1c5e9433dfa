"""Where a model came from: the ``metadata.trainer`` and ``metadata.compute.training`` records of a results file.

A reference-trainer run folder holds ``config.yaml`` (the resolved config), ``metrics.jsonl`` (one line per
iteration and evaluation) and, once finished, ``summary.json``; a warm-start folder holds ``warmstart.json`` (its
config and timings; it is the warm start's run folder, so it holds a ``config.yaml`` and ``metrics.jsonl`` too, and
``warmstart.json`` decides); a board's published model folder holds weights only, and its record is its board entry's
(:func:`published_entry`). :func:`training_record` reads any of the three; for a trainer run it keeps the curves a
reader of the board would look at (:func:`training_curves`).

What the model a trainer run started from was trained on, the ``started_from`` of a results file's trainer record:

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

How a model expects to be prompted (:func:`prompted_as`, read from the same records) lets ``eval`` say when it is
played otherwise (:func:`settings_note`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import yaml

from agentgym_bench import run_folder
from agentgym_bench.benchmark.resume import history_text
from agentgym_bench.errors import UserError
from agentgym_bench.paths import BOARD_INDEX
from agentgym_bench.rollout.specs import ENDPOINT_KINDS, endpoint_parts, locate_model, model_sha256, parse_spec


def training_record(folder: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(trainer, training_compute)`` of a trainer run folder or a warm-start model folder; paths of this machine
    in the config are reduced to their last part (:func:`local_paths_hidden`)."""
    trainer, compute = _training_record(folder)
    trainer["config"] = local_paths_hidden(trainer["config"])
    return trainer, compute


def local_paths_hidden(value: Any) -> Any:
    """``value`` with every string that is an absolute or home-relative path (``/...``, ``~...``) replaced by
    ``<local>/<its last part>``, recursively: a results file names no folder of the machine that made it (a model in
    the repository is recorded by its relative path elsewhere, :func:`~agentgym_bench.rollout.specs.model_name`)."""
    if isinstance(value, dict):
        return {k: local_paths_hidden(v) for k, v in value.items()}
    if isinstance(value, list):
        return [local_paths_hidden(v) for v in value]
    if isinstance(value, str) and value.startswith(("/", "~")):
        return f"<local>/{Path(value).name}"
    return value


def _training_record(folder: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    path = Path(folder)
    if (path / "warmstart.json").is_file():  # a finished warm start's run folder, which has a config.yaml too
        return warmstart_record(json.loads((path / "warmstart.json").read_text()))
    if (path / run_folder.CONFIG).is_file():
        config = run_folder.read_config(path)
        summary = run_folder.read_summary(path) or {}
        algorithm = config.get("preset") or config.get("adv_estimator") or "unknown"
        steps = config.get("max_steps")
        batch = config.get("rollout_batch_size")
        compute = {"steps": steps, "episodes": steps * batch if steps and batch else None,
                   "wall_time_s": summary.get("wall_time_s"),
                   **{k: summary[k] for k in ("processes", "device") if k in summary}}
        trainer: dict[str, Any] = {"algorithm": str(algorithm), "config": config}
        if (path / run_folder.METRICS).is_file():
            trainer["curves"] = training_curves(path / run_folder.METRICS)
        return trainer, compute
    entry = published_entry(path)
    if entry is not None:  # a board's published model: weights only, its record is its board entry's
        trainer = {"algorithm": str(entry.get("trainer") or "unknown"), "config": entry["trainer_config"]}
        if entry.get("curves"):
            trainer["curves"] = entry["curves"]
        training = (entry.get("compute") or {}).get("training")
        return trainer, training if isinstance(training, dict) else {}
    raise UserError(f"{path} is neither a trainer run folder (config.yaml), a warm-start folder (warmstart.json) "
                    "nor a board's published model (leaderboards/<board>/models/<name>, named by a board entry)")


def warmstart_record(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(trainer, training_compute)`` of a warm start's ``warmstart.json``: its config, with each earlier stage's
    (``started_from``) nested the same way, and the compute of all its stages added up (``stages``: how many)."""
    stages = [report]
    while isinstance(stages[-1].get("started_from"), dict):
        stages.append(stages[-1]["started_from"])

    def total(values: list[Any]) -> Any:
        return sum(values) if all(isinstance(v, (int, float)) for v in values) else None

    compute = {"steps": total([(s.get("train") or {}).get("steps") for s in stages]),
               "demonstration_episodes": total([(s.get("demonstrations") or {}).get("episodes") for s in stages]),
               "wall_time_s": total([s.get("seconds") for s in stages])}
    if len(stages) > 1:
        compute["stages"] = len(stages)
    config: dict[str, Any] = {}
    for stage in reversed(stages):
        config = {**stage.get("config", {}), **({"started_from": config} if config else {})}
    return {"algorithm": "sft-warmstart", "config": config}, compute


CURVES = ("reward/success", "val/success", "loss/entropy", "reward/in_group_std", "rollout/informative_share",
          "rollout/format_valid", "loss/kl", "loss/clipfrac", "loss/grad_norm")
"""The curves of a run kept with its results, so that what is said about why RL did or did not help can be checked:
the training episodes' success each iteration, validation success, the policy's entropy, the in-group reward spread
StarPO-S filters on and the share of groups with any spread (the signal), the share of replies that parse, the KL to
the reference, the share of clipped tokens and the gradient norm; plus every per-env validation success
(``val/<env>/success``)."""
MAX_POINTS = 500
"""Points kept per curve: a longer run is thinned evenly (its last point kept), so a results file stays small."""


def training_curves(metrics: str | Path, max_points: int = MAX_POINTS) -> dict[str, list[list[float]]]:
    """``{metric: [[step, value], ...]}`` of a trainer's ``metrics.jsonl`` for :data:`CURVES` and each
    ``val/<env>/success``, at most ``max_points`` points each (:data:`MAX_POINTS`), steps ascending. Lines that do
    not parse (a run killed mid-write) and values that are not finite numbers are skipped; a curve without points is
    left out."""
    curves: dict[str, list[list[float]]] = {}
    for row in run_folder.metrics_records(metrics):
        for key, value in row.items():
            wanted = key in CURVES or (key.startswith("val/") and key.endswith("/success") and key.count("/") == 2)
            if wanted and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                curves.setdefault(key, []).append([row["step"], float(value)])
    for key, points in curves.items():
        points.sort(key=lambda p: p[0])
        if len(points) > max_points:
            keep = sorted({round(i * (len(points) - 1) / (max_points - 1)) for i in range(max_points)})
            curves[key] = [points[i] for i in keep]
    return dict(sorted(curves.items()))


MAX_DEPTH = 8
"""Most starts followed (a run from a run from a run ...), so a loop of folders cannot recurse forever."""


def with_start(trainer: dict[str, Any], folder: str | os.PathLike, root: str | os.PathLike | None = None
               ) -> dict[str, Any]:
    """``trainer``, the record :func:`training_record` made of the trainer run ``folder``, with
    ``config.started_from`` set to the trainer config of the model its ``pretrain`` names, when that is found (module
    docstring; ``pretrain`` as the run's ``config.yaml`` has it, before this machine's paths are hidden; a relative
    one resolves under ``root``, default the current directory); paths of this machine in it are hidden as in the
    rest of the record."""
    config = trainer.get("config")
    if not isinstance(config, dict) or "started_from" in config or "pretrain" not in config:
        return trainer
    pretrain = _raw_pretrain(Path(folder))
    start = start_config(pretrain, root) if pretrain else None
    if start is None:
        return trainer
    return {**trainer, "config": {**config, "started_from": local_paths_hidden(start)}}


def _raw_pretrain(folder: Path) -> str | None:
    try:
        config = run_folder.read_config(folder)
    except (OSError, yaml.YAMLError):
        return None
    pretrain = config.get("pretrain") if isinstance(config, dict) else None
    return pretrain if isinstance(pretrain, str) else None


def start_config(model: str, root: str | os.PathLike | None = None, depth: int = 0) -> dict[str, Any] | None:
    """The trainer config that made the model folder ``model`` (see the module docstring), or ``None``."""
    if depth >= MAX_DEPTH:
        return None
    found = locate_model(model, root)
    folder = Path(found) if found else Path(root if root is not None else Path.cwd()) / model
    if not folder.is_dir():
        return None
    folder = folder.resolve()
    if (folder / "warmstart.json").is_file():
        return warmstart_record(json.loads((folder / "warmstart.json").read_text()))[0]["config"]
    run = _run_of(folder)
    if run is not None:
        config = training_record(run)[0]["config"]
        pretrain = _raw_pretrain(run)
        earlier = start_config(pretrain, root, depth + 1) if pretrain else None
        return {**config, "started_from": earlier} if earlier is not None and "started_from" not in config else config
    entry = published_entry(folder)
    return None if entry is None else entry["trainer_config"]


def _run_of(folder: Path) -> Path | None:
    """The trainer run folder ``folder`` is, or whose checkpoint's ``actor/`` it is (``checkpoint-N/actor``)."""
    return next((f for f in (folder, folder.parent.parent) if (f / run_folder.CONFIG).is_file()
                 and (f == folder or (folder.name == "actor" and folder.parent.name.startswith("checkpoint-")))), None)


def prompted_as(model: str, root: str | os.PathLike | None = None) -> tuple[dict[str, Any], str] | None:
    """How the model folder ``hf:MODEL`` loads was trained, or put on its board, to be prompted: ``(settings, how
    they were read: "as ... played it")``, or ``None`` where no record is found (a hub id, a folder without one).

    ``settings`` holds those of ``prompt`` (a template name, or entry name -> name for a board entry),
    ``history`` (``None``: the whole conversation) and ``max_new_tokens`` that the record gives. Read, in the order
    of :func:`start_config`: a warm-start folder's ``warmstart.json`` (its ``rollout``), a trainer run's
    ``config.yaml`` (its validation envs', as the run scored itself), a board's published model's entry."""
    found = locate_model(model, root)
    if found is None:
        return None
    folder = Path(found).resolve()
    if (folder / "warmstart.json").is_file():
        try:
            rollout = json.loads((folder / "warmstart.json").read_text()).get("rollout")
        except ValueError:
            return None
        if not isinstance(rollout, dict):
            return None
        settings = {k: rollout[k] for k in ("prompt", "history", "max_new_tokens") if k in rollout}
        return settings, "as its warm start trained it (warmstart.json)"
    run = _run_of(folder)
    if run is not None:
        config = run_folder.read_config(run)
        manager = config.get("val_env_manager") or config.get("train_env_manager") or {}
        settings = {k: v for k, v in (("prompt", (manager.get("env_kwargs") or {}).get("prompt")),
                                      ("max_new_tokens", config.get("max_new_tokens"))) if v is not None}
        if "history_length" in manager:
            settings["history"] = manager["history_length"]
        return settings, f"as its trainer run trained and validated it ({run_folder.CONFIG})"
    entry = published_entry(folder)
    if entry is None:
        return None
    settings = {"history": entry.get("history"), "max_new_tokens": (entry.get("sampling") or {}).get("max_new_tokens")}
    prompts = entry.get("prompts") or {}
    if prompts:
        settings["prompt"] = next(iter(prompts.values())) if len(set(prompts.values())) == 1 else dict(prompts)
    return settings, "as its board entry was played"


def settings_note(spec: str, prompts: dict[str, str], history: int | None, max_new_tokens: int) -> str | None:
    """``eval``'s note when the local model of ``spec`` (``hf:`` or ``vllm:``, or an endpoint's model named by its
    local folder, as ``serve PATH`` names it) was trained, or put on its board, with
    another prompt template, history window or reply budget than this run's (:func:`prompted_as`; ``prompts``: entry
    name -> template of this run): its numbers would not be those of its training or its board entry. ``None`` when
    they agree or nothing is recorded, and on two-player suites (no ``prompts``), whose games a single-agent record
    does not describe."""
    if not prompts:
        return None
    kind, target = parse_spec(spec)
    if kind in ENDPOINT_KINDS and target:  # a served local folder: `serve PATH` names the model by its path
        target = endpoint_parts(target)[0]
        if not os.path.isdir(target):
            return None
    elif kind not in ("hf", "vllm"):
        return None
    found = prompted_as(target) if target else None
    if found is None:
        return None
    settings, source = found
    theirs, mine = [], []
    if "prompt" in settings:
        theirs_by = settings["prompt"]
        wanted = {name: theirs_by.get(name, used) if isinstance(theirs_by, dict) else theirs_by
                  for name, used in prompts.items()}
        if wanted != prompts:
            theirs.append(f"--prompt {_prompts_text(wanted)}")
            mine.append(f"--prompt {_prompts_text(prompts)}")
    if "history" in settings and settings["history"] != history:
        theirs.append(f"--history {history_text(settings['history'])}")
        mine.append(f"--history {history_text(history)}")
    if "max_new_tokens" in settings and settings["max_new_tokens"] != max_new_tokens:
        theirs.append(f"--max-new-tokens {settings['max_new_tokens']}")
        mine.append(f"--max-new-tokens {max_new_tokens}")
    if not theirs:
        return None
    return (f"note: {target} expects {' '.join(theirs)} ({source}); this run uses {' '.join(mine)}, so its "
            f"numbers will not be comparable with those. To play it as it was played there, add: {' '.join(theirs)}")


def _prompts_text(prompts: dict[str, str]) -> str:
    names = set(prompts.values())
    return next(iter(names)) if len(names) == 1 else ",".join(f"{k}={v}" for k, v in prompts.items())


def published_entry(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The board record (``board.json``) of the entry whose published model is ``folder``
    (``leaderboards/<board>/models/<slug>``, same name and weights hash) and that carries a trainer config, or
    ``None``."""
    folder = Path(folder).resolve()
    board = folder.parent.parent
    if folder.parent.name != "models" or not (board / BOARD_INDEX).is_file():
        return None
    try:
        index = json.loads((board / BOARD_INDEX).read_text())
    except ValueError:
        return None
    digest = model_sha256(folder)
    for record in index.get("submissions", []) if isinstance(index, dict) else []:
        if (isinstance(record, dict) and digest is not None and record.get("model_sha256") == digest
                and isinstance(record.get("model"), str) and Path(record["model"]).name == folder.name
                and isinstance(record.get("trainer_config"), dict)):
            return record
    return None
