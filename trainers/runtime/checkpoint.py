"""Checkpoints: ``OUTPUT_DIR/checkpoint-N/`` after iteration N, written so that a killed run can always resume.

Layout::

    checkpoint-N/
      actor/               Hugging Face folder: model + tokenizer (load with from_pretrained, evaluate, serve); with
                           LoRA the merged model
      critic/              Hugging Face folder of the critic (AutoModelForTokenClassification), gae runs only
      actor_adapter/       LoRA runs: the actor's peft adapters (what a resumed run loads onto ``pretrain``)
      critic_adapter/      LoRA runs with a critic: its adapters and value head
      trainer_state.pt     iteration, optimiser and scheduler states, numpy Generator state, elapsed time, the
                           first evaluation's successes (a resumed run reports its gain from them), the reward
                           KL coefficient (adaptive with target_kl)
      rng_rank{r}.pt       the rollout sampler's torch.Generator state of each rank
      config.yaml          the run's config

Under FSDP2 the models and optimiser states are gathered whole to rank 0 and written in this same layout
(``trainers/runtime/fsdp.py``); the optimiser states are then keyed by parameter name, so a checkpoint resumes with the
strategy that wrote it.

The iteration number is also the rollout seed counter (training group seeds are a function of it). A checkpoint
is written to ``checkpoint-N.tmp`` and renamed when complete, so a run killed mid-save (even by SIGKILL) leaves the
previous checkpoint intact; only complete folders are found by :func:`find_checkpoint` (the run folder's one rule,
:func:`agentgym_bench.run_folder.checkpoints`).

The warm start (``trainers/sft/warmstart.py``) writes its checkpoints by the same rule into its own run folder
(:func:`save_sft`, :func:`load_sft`)::

    checkpoint-N/        after optimiser step N
      actor/             Hugging Face folder: model + tokenizer
      trainer_state.pt   the settings' key, optimiser and schedule states, the shuffling generator's state at the
                         start of the epoch, torch's RNG state, every step's loss, the epoch, elapsed time
      config.yaml        the run's config

Only the latest is kept, and a checkpoint of other settings (its key) is not taken up: it is removed.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench import run_folder
from agentgym_bench.benchmark.resume import flat
from agentgym_bench.files import usual_modes, write_atomic
from agentgym_bench.rollout.specs import model_sha256
from trainers.runtime import fsdp, lora
from trainers.runtime.config_loading import ConfigError


def find_checkpoint(output_dir: Path, resume_from_checkpoint: str | None) -> Path | None:
    """The checkpoint to resume from: ``None`` (fresh start), ``auto`` (latest in ``output_dir``, or a fresh start),
    or a path.

    Raises:
        ConfigError: an explicit path that is not a complete checkpoint, or a fresh start into an ``output_dir`` that
            holds a run's checkpoints (it would overwrite them: resume, or choose another folder).
    """
    if resume_from_checkpoint is None:
        found = run_folder.checkpoints(output_dir)
        if found:
            raise ConfigError(f"output_dir {output_dir} already holds a run (latest: {found[-1].name}); continue it "
                              "with resume_from_checkpoint=auto, or start over in another output_dir (or delete "
                              "this one)")
        return None
    if resume_from_checkpoint == "auto":
        found = run_folder.checkpoints(output_dir)
        return found[-1] if found else None
    path = Path(resume_from_checkpoint).expanduser()
    if not (path / run_folder.STATE).exists():
        raise ConfigError(f"resume_from_checkpoint={resume_from_checkpoint!r} is not a complete checkpoint folder "
                          "(no trainer_state.pt); use 'auto' for the latest one in output_dir")
    return path


RESUME_MAY_CHANGE = frozenset({"resume_from_checkpoint", "output_dir", "progress", "num_threads", "device",
                               "save_steps", "save_total_limit", "max_steps"})
"""Config keys a resumed run may set otherwise than the run did: where and how it runs and keeps checkpoints, not what
it trains; and ``max_steps``, to train a run further (the learning-rate schedule then follows the new length from
the resumed iteration on, which a line says). ``dtype: auto`` is also accepted: the run's choice is read back."""


def check_resumable(checkpoint: Path, config: dict[str, Any]) -> None:
    """Refuse to resume ``checkpoint`` with a config that trains otherwise than the one it was saved with.

    A resumed run restores the optimiser, the schedule and the streams of the run it continues; a changed key would
    be ignored by them (a new learning rate under the restored schedule) and then recorded in ``config.yaml`` as if
    the whole run had used it. ``config``: the resolved config as plain data (``TrainConfig.to_dict``). Keys the
    checkpoint's ``config.yaml`` does not have (added to the trainer since) and :data:`RESUME_MAY_CHANGE` are not
    compared, nor ``pretrain`` where the run recorded its start's weights (:func:`check_start` compares those, so the
    same weights named by another path, from another folder or a moved clone, resume).

    Raises:
        ConfigError: naming each key that differs, with both values, and what to run instead.
    """
    saved, now = flat(run_folder.read_config(checkpoint)), flat(config)  # tuples as YAML reads them back: lists
    weighed = {"pretrain"} if (checkpoint.parent / START).is_file() else set()
    differ = [f"{k} {saved[k]!r} -> {now.get(k)!r}" for k in saved
              if k.split(".")[0] not in RESUME_MAY_CHANGE | weighed and now.get(k) != saved[k]
              and not (k == "dtype" and now.get(k) == "auto")]
    if differ:
        raise ConfigError(f"{checkpoint} was trained with other settings than this command's: {'; '.join(differ)}. "
                          "A resumed run continues the run as it started (its optimiser, schedule and streams): give "
                          f"the settings it was started with, or start a new run from its weights (pretrain="
                          f"{checkpoint / 'actor'} and another output_dir)")
    if saved.get("max_steps") != now.get("max_steps"):  # said once the resume is taken up, not before a refusal
        print(f"resuming {checkpoint.name} of a run of max_steps={saved.get('max_steps')} with max_steps="
              f"{now.get('max_steps')}: from here the learning-rate schedule ({now.get('lr_scheduler_type')}) follows "
              "the new length", file=sys.stderr)


LOCK = ".lock"
"""A run folder's lock file: held (``flock``) by the process that trains in it, released when that process ends,
however it ends."""


class FolderLock:
    """``output_dir`` locked for this process (:func:`hold`); :meth:`close` releases it, and removes the folder again
    if this lock made it and nothing else was written there (a run refused before it started leaves nothing)."""

    def __init__(self, output_dir: Path):
        if output_dir.exists() and not output_dir.is_dir():
            raise ConfigError(f"output_dir {output_dir} is a file: a run writes a folder (e.g. runs/mine)")
        self.folder, self.made = output_dir, not output_dir.exists()
        output_dir.mkdir(parents=True, exist_ok=True)
        self.handle = open(output_dir / LOCK, "a+")  # noqa: SIM115 - held open for the run, closed by close()

    def close(self) -> None:
        self.handle.close()
        if self.made and [p.name for p in self.folder.iterdir()] == [LOCK]:
            shutil.rmtree(self.folder, ignore_errors=True)


def hold(output_dir: Path) -> FolderLock:
    """Lock ``output_dir`` for this process, or a one-line :class:`ConfigError` naming the process that holds it: two
    runs in one folder would take each other's checkpoints (one removes what the other is loading) and interleave
    their metrics. The lock (``flock``) goes with the process, however it ends.

    Raises:
        ConfigError: another live process holds the folder.
    """
    lock = FolderLock(output_dir)
    try:
        fcntl.flock(lock.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.handle.seek(0)
        holder = lock.handle.read().strip() or "another process"
        lock.handle.close()
        raise ConfigError(f"{output_dir} is in use by a training process ({holder}) still running: wait for it to "
                          "end (or stop it), or give another output_dir") from None
    lock.handle.seek(0)
    lock.handle.truncate()
    lock.handle.write(f"pid {os.getpid()}")
    lock.handle.flush()
    return lock


START = "start.json"
"""A run folder's record of the model it started from: ``{"pretrain": ..., "sha256": ...}`` (:func:`check_start`)."""


def check_start(output_dir: Path, pretrain: str) -> None:
    """Refuse to resume a run whose ``pretrain`` now holds other weights than those it started from (its
    :func:`record_start`): a LoRA run's adapters would sit on another base, and every run's KL reference would be
    another model, without a word (``models/warmstart`` is rebuilt in place by the warm start's stages). Runs
    recorded before this file existed are not checked.

    Raises:
        ConfigError: the weights at ``pretrain`` differ from those the run started from.
    """
    record = output_dir / START
    if not record.is_file():
        return
    recorded, digest = json.loads(record.read_text())["sha256"], model_sha256(pretrain)
    if recorded != digest:
        raise ConfigError(f"pretrain {pretrain} holds other weights than the run in {output_dir} started from "
                          f"(sha256 {recorded[:12]}..., now {(digest or 'no weights')[:12]}...): a resumed run would "
                          "continue on another base model. Point pretrain at the weights it started from, or start "
                          "a new run")


def record_start(output_dir: Path, pretrain: str) -> None:
    """Write ``start.json``: the weights a fresh run starts from (``pretrain``, a local folder: its
    :func:`model_sha256`; nothing for a hub id). Called once the model has loaded, so a refused start leaves no
    record behind."""
    digest = model_sha256(pretrain)
    if digest is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(output_dir / START, json.dumps({"pretrain": str(pretrain), "sha256": digest}).encode())


def save(output_dir: Path, step: int, models: Any, optimizers: dict[str, Any], schedulers: dict[str, Any],
         dist: Any, config: Any, state: dict[str, Any]) -> Path:
    """Write ``checkpoint-{step}`` (every rank calls this; rank 0 writes the shared files) and prune old ones.

    ``state`` holds ``step``, ``elapsed``, ``numpy_rng``, ``first_eval``, ``last_eval`` (the latest validation's
    episodes), ``kl_coef`` (same on every rank) and
    ``policy_rng`` (per rank).
    """
    final = run_folder.checkpoint_path(output_dir, step)
    tmp = run_folder.checkpoint_path(output_dir, step, partial=True)
    if dist.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    torch.save({"policy_rng": state["policy_rng"]}, tmp / f"rng_rank{dist.rank}.pt")
    modules = {"actor": models.actor_module, "critic": models.critic_module}
    for name, module in modules.items():  # every rank: a sharded model's state is gathered to rank 0
        if module is not None:
            whole = fsdp.full_state_dict(module)
            if dist.is_main:
                write_model(module, whole, tmp / name)
    optimizer_states = {k: fsdp.optimizer_state(modules[k], o) for k, o in optimizers.items()}
    if dist.is_main:
        models.tokenizer.save_pretrained(tmp / "actor")
        config.save(tmp / run_folder.CONFIG)
    dist.barrier()
    if dist.is_main:
        torch.save({
            "step": state["step"], "elapsed": state["elapsed"], "numpy_rng": state["numpy_rng"],
            "first_eval": list(state.get("first_eval", [])), "kl_coef": state.get("kl_coef"),
            "last_eval": list(state.get("last_eval", [])),
            "world_size": dist.world_size, "strategy": config.strategy if dist.grouped else "single",
            "optimizers": optimizer_states,
            "schedulers": {k: s.state_dict() for k, s in schedulers.items()},
        }, tmp / run_folder.STATE)
        _complete(output_dir, tmp, final, config.save_total_limit)
    dist.barrier()
    return final


def _complete(output_dir: Path, tmp: Path, final: Path, keep: int) -> None:
    """The checkpoint rule's last step: the finished ``tmp`` renamed to ``final``, then only the ``keep`` latest
    complete checkpoints of ``output_dir`` kept; the files get the user's umask (:func:`~agentgym_bench.files.
    usual_modes`)."""
    usual_modes(tmp)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in run_folder.checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def write_model(module: torch.nn.Module, whole: dict[str, torch.Tensor], folder: Path) -> None:
    """Write a model's full state dict as a Hugging Face folder. A LoRA model is written twice: its adapters
    (``peft`` folder ``{folder}_adapter/``, what a resumed run loads) and the merged model (``folder``, a plain
    Hugging Face model for evaluation and serving)."""
    if lora.is_lora(module):
        module.save_pretrained(folder.with_name(folder.name + "_adapter"), state_dict=whole)
        module.get_base_model().save_pretrained(folder, state_dict=lora.merged_state_dict(whole,
                                                                                          lora.layer_scales(module)))
    else:
        module.save_pretrained(folder, state_dict=whole)
        fsdp.fix_architectures(folder, module)


def load_state(path: Path, dist: Any, optimizers: dict[str, Any], schedulers: dict[str, Any],
               models: Any, strategy: str) -> dict[str, Any]:
    """Restore optimisers and schedulers in place (a sharded model's optimiser keeps its shard of the saved full
    state); return the loop state (``step``, ``elapsed``, ``numpy_rng``, ``first_eval``, ``policy_rng``). The
    models themselves are loaded from ``actor/`` and ``critic/`` (or their ``_adapter/``) by the loop.

    Raises:
        ConfigError: the checkpoint was written by a different number of processes (the sampler states are
            per rank) or strategy (the optimiser states are stored differently).
    """
    state = torch.load(path / run_folder.STATE, weights_only=False)
    if state["world_size"] != dist.world_size:
        raise ConfigError(f"{path} was written by {state['world_size']} process(es); resume it with the same "
                          f"number, not {dist.world_size}")
    written = state.get("strategy", "ddp" if dist.enabled else "single")
    if written != (strategy if dist.grouped else "single"):
        raise ConfigError(f"{path} was written with strategy={written}; resume it with the same strategy, "
                          f"not {strategy}")
    for name, optimizer in optimizers.items():
        module = models.actor_module if name == "actor" else models.critic_module
        fsdp.load_optimizer_state(module, optimizer, state["optimizers"][name])
    for name, scheduler in schedulers.items():
        scheduler.load_state_dict(state["schedulers"][name])
        follow_schedule(scheduler)
    state["policy_rng"] = torch.load(path / f"rng_rank{dist.rank}.pt", weights_only=False)["policy_rng"]
    return state


def follow_schedule(scheduler: Any) -> None:
    """Set each parameter group's learning rate to what ``scheduler`` (a ``LambdaLR``: this run's schedule, restored
    at the checkpoint's iteration) gives now. The optimiser's saved state holds the old run's rate, which differs
    when ``max_steps`` changed (at the end of a cosine run: 0), and the new schedule would otherwise take effect only
    after one more iteration."""
    rates = [base * factor(scheduler.last_epoch) for base, factor in zip(scheduler.base_lrs, scheduler.lr_lambdas,
                                                                           strict=True)]
    for group, rate in zip(scheduler.optimizer.param_groups, rates, strict=True):
        group["lr"] = rate
    scheduler._last_lr = rates


def save_file(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` (``torch.save``) to the file ``path`` atomically (a temporary file, then a rename): the warm
    start's cache of its demonstrations' rows (``trainers.sft.warmstart.demonstration_rows``)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    write_atomic(path, buffer.getvalue())


def save_sft(output_dir: Path, step: int, model: Any, tokenizer: Any, config: Any, state: dict[str, Any]) -> Path:
    """Write the warm start's ``checkpoint-{step}`` (module docstring; ``state`` holds ``key`` and the training
    state) into ``.tmp``, rename it when complete and remove the one before."""
    final = run_folder.checkpoint_path(output_dir, step)
    tmp = run_folder.checkpoint_path(output_dir, step, partial=True)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp / run_folder.ACTOR)
    tokenizer.save_pretrained(tmp / run_folder.ACTOR)
    torch.save(state, tmp / run_folder.STATE)
    config.save(tmp / run_folder.CONFIG)
    _complete(output_dir, tmp, final, keep=1)
    return final


def load_sft(output_dir: Path, key: dict[str, Any], who: str | None) -> tuple[Path, dict[str, Any]] | None:
    """``(checkpoint, training state)`` of the latest checkpoint in ``output_dir`` if it was written with the same
    ``key``, else ``None``; with ``who`` (the command), a note on stderr saying which. Reads only: a run that does
    not take a checkpoint up removes them (:func:`remove_checkpoints`), so that its own are the only ones."""
    found = run_folder.checkpoints(output_dir)
    if not found:
        return None
    try:
        saved = torch.load(found[-1] / run_folder.STATE, weights_only=False)
    except Exception as error:  # e.g. written by another torch version
        saved, why = None, f"it cannot be read ({error})"
    else:
        old, now = flat(saved.get("key") or {}), flat(key)
        differ = [f"{k} {old.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(old) | set(now))
                  if old.get(k) != now.get(k)]
        why = f"it was written with other settings ({'; '.join(differ)[:300]})"
    if saved is None or saved.get("key") != key:
        if who is not None:
            print(f"{who}: ignoring {found[-1]}: {why}; starting afresh", file=sys.stderr)
        return None
    if who is not None:
        print(f"{who}: resuming from {found[-1]} after step {len(saved['losses'])}", file=sys.stderr)
    return found[-1], saved


def remove_checkpoints(output_dir: Path) -> None:
    """Remove every checkpoint of ``output_dir``, complete or partial."""
    for path in output_dir.glob("checkpoint-*"):
        if run_folder.CHECKPOINT.match(path.name.removesuffix(".tmp")) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
