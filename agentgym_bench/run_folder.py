"""A trainer's run folder (``output_dir`` of ``agentgym-bench train``, ``output`` of ``agentgym-bench warmstart``): its
layout, which checkpoint is the last, and reading and writing its files. The trainers write it
(``trainers/rl/train.py``, ``trainers/sft/warmstart.py``, ``trainers/runtime/checkpoint.py``); the benchmark reads it
(``hf:RUN`` evaluates its last checkpoint, ``eval --trained-by RUN`` records its config and curves), as do
``compare-runs`` and the main job. It sits at the bottom of the library, beside ``paths.py``, so that every floor reads
it without importing the trainers (or torch).

Layout::

    config.yaml          the resolved config (:data:`CONFIG`)
    metrics.jsonl        one line per iteration and evaluation (:data:`METRICS`)
    curves.png           the curves (:data:`CURVES`)
    compute_dtype.json   with ``dtype: auto``: the dtype chosen at the start and the probe's timings
    start.json           the RL trainer's record of the weights it started from (``pretrain`` and their SHA-256),
                         checked when the run is resumed
    .lock                held by the RL trainer's process while it trains (``flock``): a second process is refused
    summary.json         once finished: validation success before and after, wall time (:data:`SUMMARY`)
    checkpoint-N/        after iteration N (``trainers/runtime/checkpoint.py`` describes what it holds): ``actor/``, a
                         Hugging Face folder, ``trainer_state.pt`` (:data:`STATE`), ...
    checkpoint-N.tmp/    a checkpoint being written, renamed to ``checkpoint-N`` when complete

The warm start's run folder has the same ``config.yaml``, ``metrics.jsonl`` and ``checkpoint-N/`` (with ``actor/``
and ``trainer_state.pt``) while it trains; once done, its checkpoints are removed and the folder is the model (a
Hugging Face folder, ``config.json``, plus ``warmstart.json``), so :func:`is_run_folder` no longer calls it a run.

The one checkpoint rule: a checkpoint is written whole into ``checkpoint-N.tmp`` and then renamed, so every folder
named ``checkpoint-N`` is complete (a run killed mid-save leaves only a ``.tmp``). Resuming, pruning, evaluating
``hf:RUN`` and the main job's "resuming" note all use :func:`checkpoints`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from agentgym_bench.errors import UserError
from agentgym_bench.files import write_atomic
from agentgym_bench.stats import mean_interval

CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
CURVES = "curves.png"
SUMMARY = "summary.json"
STATE = "trainer_state.pt"
ACTOR = "actor"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
"""The name of a complete checkpoint folder (a partial one ends in ``.tmp``)."""


def checkpoint_path(run: Path, step: int, *, partial: bool = False) -> Path:
    """``run/checkpoint-{step}``, or with ``partial`` the ``.tmp`` folder it is written to first."""
    return run / f"checkpoint-{step}{'.tmp' if partial else ''}"


def checkpoints(run: str | Path) -> list[Path]:
    """The complete checkpoints of ``run`` (the module's one rule), oldest first; none if ``run`` is not a folder."""
    run = Path(run)
    if not run.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in run.iterdir() if (m := CHECKPOINT.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def is_run_folder(path: str | Path) -> bool:
    """Whether ``path`` is a run folder (``config.yaml``) rather than a model folder (``config.json``)."""
    return Path(path, CONFIG).is_file() and not Path(path, "config.json").is_file()


def final_actor(run: str | Path) -> Path:
    """The actor (a Hugging Face folder) of the last complete checkpoint of ``run``.

    Raises:
        UserError: ``run`` holds no complete checkpoint.
    """
    found = checkpoints(run)
    if not found:
        raise UserError(f"{run} has no complete checkpoint-N/actor")
    return found[-1] / ACTOR


def read_config(run: str | Path) -> dict[str, Any]:
    """The run's resolved config as a plain dict (``{}`` for an empty file)."""
    return yaml.safe_load(Path(run, CONFIG).read_text()) or {}


def read_summary(run: str | Path) -> dict[str, Any] | None:
    """The run's ``summary.json``; ``None`` if the run has not finished (no such file).

    Raises:
        UserError: the file is not JSON.
    """
    path = Path(run, SUMMARY)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise UserError(f"{path} is not JSON ({error})") from None


def learning_line(run: str | Path) -> str:
    """One line on what a finished RL run did: its own validation success at every evaluation (the learning curve,
    the first point before training), the gain with its paired interval, the share of training groups with any
    reward spread (the signal RL learns from) and where its curves are drawn; or that it has not finished."""
    summary = read_summary(run)
    if summary is None:
        return f"no finished run in {run}"
    points, shares = [], []
    for line in Path(run, METRICS).read_text().splitlines():
        record = json.loads(line)
        if "val/success" in record:
            points.append(f"{record['step']}: {record['val/success']:.3f}")
        if "rollout/informative_share" in record:
            shares.append(record["rollout/informative_share"])
    val = summary["val"]
    signal = f"; groups with reward spread {sum(shares) / len(shares):.2f}" if shares else ""
    return (f"{', '.join(points)}; gain {val['gain']:+.3f} [{val['ci_low']:+.3f}, {val['ci_high']:+.3f}]{signal}; "
            f"curves: {Path(run, CURVES)}")


ROOM_KEYS = ("pretrain", "max_steps", "train_seed_start", "rollout_batch_size", "train_env_manager")
"""The config keys that fix which model a run starts from and which rooms it plays at each iteration (not ``seed``,
which drives only the sampling streams, the mini-batch order and a critic's initialisation): a frozen run pairs with
a run whose values agree (:func:`against_frozen_line`)."""


def against_frozen(run: str | Path, frozen: str | Path) -> tuple[list[int], dict[str, list[float]]]:
    """What a finished RL run learned on its own training rooms, iteration by iteration: over the second half of its
    iterations, per env and for all envs, its training success minus that of ``frozen``, a finished run of the same
    config with ``learning_rate: 0`` (the start model, never updated, on the same rooms: every run of a config plays
    the same rooms at each iteration, so their difficulty cancels).

    Returns:
        ``(steps, differences)``: the iterations compared and, per key (``"all envs"`` or an env id), one difference
        per iteration (``(len(steps),)``; an env missing from an iteration's records is skipped there).

    Raises:
        ValueError: naming why the two cannot be paired (not finished, ``frozen`` not frozen, other rooms or start,
            ``dynamic_sampling``, no common iteration).
    """
    if read_summary(run) is None:
        raise ValueError(f"no finished run in {run}")
    if read_summary(frozen) is None:
        raise ValueError(f"no finished frozen run in {frozen}")
    mine, theirs = read_config(run), read_config(frozen)
    if theirs.get("learning_rate") != 0:
        raise ValueError(f"{frozen} is not a frozen run (learning_rate {theirs.get('learning_rate')}, not 0)")
    if (mine.get("dynamic_sampling") or {}).get("enabled"):
        raise ValueError(f"not paired with {frozen}: with dynamic_sampling a run's refill rounds follow its own "
                         "groups")
    differs = [k for k in ROOM_KEYS if mine.get(k) != theirs.get(k)]
    if differs:
        raise ValueError(f"not paired with {frozen}: other rooms or start ({', '.join(differs)} differ)")
    rows = [{r["step"]: r for r in metrics_records(Path(folder, METRICS)) if "reward/success" in r}
            for folder in (run, frozen)]
    steps = sorted(set(rows[0]) & set(rows[1]))
    if not steps:
        raise ValueError(f"no training iteration logged by both {run} and {frozen}")
    steps = steps[len(steps) // 2:]
    keys = ["reward/success"] + sorted(k for k in rows[0][steps[-1]] if k.startswith("reward/") and
                                       k.endswith("/success") and k.count("/") == 2 and k in rows[1][steps[-1]])
    return steps, {"all envs" if key == "reward/success" else key.split("/")[1]:
                   [rows[0][s][key] - rows[1][s][key] for s in steps if key in rows[0][s] and key in rows[1][s]]
                   for key in keys}


def against_frozen_line(run: str | Path, frozen: str | Path) -> str:
    """:func:`against_frozen` as one line: per key the mean difference over the iterations with its 95% normal
    interval (each iteration plays new rooms, so its difference is one draw); or why the two cannot be paired."""
    try:
        steps, differences = against_frozen(run, frozen)
    except ValueError as e:
        return str(e)
    parts = [f"{key} {mean:+.3f} [{low:+.3f}, {high:+.3f}]"
             for key, (mean, low, high) in ((k, mean_interval(d)) for k, d in differences.items())]
    span = f"iteration {steps[0]}" if len(steps) == 1 else f"iterations {steps[0]}-{steps[-1]}"
    return f"{span}: " + ", ".join(parts)


RATE_WINDOW = 20
"""Iterations :func:`progress_line` measures the rate over."""


def metrics_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` (``path``) that carry an integer ``step``, in file order; lines that do not
    parse (a run killed mid-write) or are not records are skipped."""
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            records.append(row)
    return records


def progress_line(run: str | Path) -> str | None:
    """Where a training run stands, from its files: ``"iteration 300/1000, 10.4 it/min, ~67 min left,
    checkpoint-300"`` (the rate over the last :data:`RATE_WINDOW` iterations the current process logged, its
    validations included), or ``"finished"`` (``summary.json``); ``None`` before it logged an iteration. Torn lines
    (a run killed mid-write) are skipped."""
    run = Path(run)
    if (run / SUMMARY).exists():
        return "finished"
    records = metrics_records(run / METRICS) if (run / METRICS).exists() else []
    rows = [(r["step"], r["time/total"]) for r in records if isinstance(r.get("time/total"), (int, float))]
    if not rows:
        return None
    step, now = rows[-1]
    first = rows[-1]
    for row in reversed(rows[-RATE_WINDOW - 1:-1]):
        if row[1] > first[1]:  # a resumed run's clock starts again: the rate is the current process's
            break
        first = row
    max_steps = read_config(run).get("max_steps")
    parts = [f"iteration {step}/{max_steps}" if max_steps else f"iteration {step}"]
    if step > first[0] and now > first[1]:
        rate = (step - first[0]) / (now - first[1]) * 60
        parts.append(f"{rate:.1f} it/min" + (f", ~{(max_steps - step) / rate:.0f} min left" if max_steps else ""))
    found = checkpoints(run)
    return ", ".join(parts + [found[-1].name] if found else parts)


def write_summary(run: Path, summary: dict[str, Any]) -> None:
    """Write the run's ``summary.json``, whole or not at all (a main job reads it as the run's end)."""
    write_atomic(run / SUMMARY, (json.dumps(summary, indent=2) + "\n").encode())
