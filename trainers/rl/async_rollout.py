"""Asynchronous rollouts with bounded staleness (``async_rollout.max_staleness >= 1``; issue 52).

A rollout worker in its own process (``torch.multiprocessing``, ``spawn``) plays the training batches while the
learner (the main process, :func:`trainers.rl.train.run_iteration`) updates::

    learner   publish v0 | take batch 1 | update | publish v1 | take batch 2 | update | publish v2 | ...
    worker    batch 1 (v0) | batch 2 (v0, needs >= v0) | batch 3 (v1, needs >= v1) | ...      (max_staleness 1)

- **Policy version**: ``v`` names the learner's weights after iteration ``v`` (``v0``: the starting weights, or the
  checkpoint's after ``N`` iterations). The learner consumes batch ``k`` at version ``k - 1``.
- **Weight hand-over** (:class:`PolicyFiles`): after each iteration the learner writes its actor's plain state dict
  to ``OUTPUT_DIR/async_policy/policy-{v}.pt`` (``torch.save`` to a temporary name, then ``os.replace``, an atomic
  rename: a reader sees a whole file or none) and deletes all but the two newest. Before each batch the worker loads
  the newest file if it is newer than its weights.
- **The bound** (AReaL's ``max_head_offpolicyness``: staleness is controlled where generation starts): the worker
  starts batch ``k`` only once version ``k - 1 - max_staleness`` exists, and always with the newest weights it finds,
  so the batch's lag when the learner takes it, ``(k - 1) - v``, is at most ``max_staleness``; the same rule keeps
  at most ``max_staleness + 1`` batches waiting for the learner. The learner checks every batch again and drops one
  over the bound (:func:`over_bound`; ``async/dropped_share``); by the rule above none is, so batch ``k`` is always
  played on the seeds of iteration ``k``, as in the synchronous loop.
- **Batch hand-over** (:class:`BatchFiles`): by files too, ``OUTPUT_DIR/async_policy/batch-{k}.pkl``, written the
  same way (to a temporary name, then renamed), never through a pipe a killed worker could leave half-written (the
  class says why).
- **Each batch records** its iteration, the policy version that played it, the sampler's log-probs of every
  generated token (the behaviour policy's, in the trajectories' turns), the worker's random-stream state after it
  (the checkpoint keeps it, so a resumed worker continues the stream) and its generation time.
- **The loss** corrects the lag with AReaL's decoupled PPO objective (:func:`trainers.algos.losses.behaviour_weights`).

Killing either process, at any moment, leaves a run that resumes from its last checkpoint: the worker polls for its
parent and exits when the learner is gone; the learner, while it waits for a batch, looks every ``_POLL_S`` seconds
whether the worker lives and raises :class:`RolloutWorkerExited` (one line) once it is gone and its batch is not
there. A resumed run starts a fresh worker at the checkpoint's iteration, weights and random stream. Which weights
played which batch depends on timing, so a run with ``max_staleness >= 1`` is consistent but not bit-reproducible.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.errors import UserError
from agentgym_bench.rollout.trajectory import Trajectory
from trainers.rl.config import config_from_dict
from trainers.rl.rollouts import Sampler, make_env_groups, play, prompt_fits
from trainers.runtime.distributed import Dist, resolve_device

_POLL_S = 0.05
_NAME = re.compile(r"^policy-(\d+)\.pt$")
_BATCH = re.compile(r"^batch-(\d+)\.pkl$")


@dataclass
class RolloutBatch:
    """One training batch from the worker."""

    iteration: int
    """The loop iteration it is for (its env groups use that iteration's seeds)."""
    policy_version: int
    """The learner iteration whose weights played it (the behaviour policy)."""
    trajectories: list[Trajectory]
    """The episodes; each turn's ``logprobs`` are the behaviour policy's."""
    sampler_state: bytes
    """The worker's training random stream after this batch (a ``torch.Generator`` state)."""
    seconds: float
    """Generation time in the worker."""


def over_bound(iteration: int, policy_version: int, max_staleness: int) -> bool:
    """Whether a batch for ``iteration``, played by ``policy_version``, lags the learner (at version
    ``iteration - 1`` when it takes the batch) by more than ``max_staleness`` versions."""
    return (iteration - 1) - policy_version > max_staleness


class PolicyFiles:
    """The learner's weights by version, as files in one folder (written atomically, the two newest kept)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def reset(self) -> None:
        """An empty folder (a killed run may have left files of versions a resumed run will write again)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    def publish(self, state_dict: dict[str, torch.Tensor], version: int) -> None:
        tmp = self.folder / f".policy-{version}.pt.tmp"
        torch.save({k: v.detach().cpu() for k, v in state_dict.items()}, tmp)
        os.replace(tmp, self.folder / f"policy-{version}.pt")
        for old in self.versions()[:-2]:
            (self.folder / f"policy-{old}.pt").unlink(missing_ok=True)

    def versions(self) -> list[int]:
        return sorted(int(m.group(1)) for p in self.folder.iterdir() if (m := _NAME.match(p.name)))

    def load(self, version: int) -> dict[str, torch.Tensor] | None:
        """The weights of ``version``, or ``None`` if the file was deleted meanwhile (a newer one exists)."""
        try:
            return torch.load(self.folder / f"policy-{version}.pt", weights_only=True)
        except FileNotFoundError:
            return None


class RolloutWorkerExited(UserError, RuntimeError):
    """The worker process is gone (killed, out of memory, crashed) before it handed over the batch the learner waits
    for. One line on the command line (a :class:`~agentgym_bench.errors.UserError`): the run resumes from its last
    checkpoint."""


class BatchFiles:
    """The worker's batches, one file each (``batch-{k}.pkl``) in the weights' folder, written atomically.

    Why files and not a ``multiprocessing.Queue``: a queue pickles a batch into a pipe, and a writer killed part-way
    through a batch larger than the pipe's buffer (64 KiB) leaves half a message there. The reader then blocks in the
    read for good: it holds the pipe's write end itself, so no end-of-file ever comes, and ``poll()`` cannot tell a
    half message from a whole one. A file written to a temporary name and then renamed (``os.replace``) is seen whole
    or not at all, so the learner can wait with a plain poll loop that also checks the worker is alive, and a killed
    writer leaves only a temporary file nobody reads. No bound is needed here: the worker starts batch ``k`` only
    once the learner published version ``k - 1 - max_staleness`` (it took batch ``k - 1 - max_staleness`` by then),
    so at most ``max_staleness + 1`` files wait.
    """

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, iteration: int) -> Path:
        return self.folder / f"batch-{iteration}.pkl"

    def put(self, batch: RolloutBatch) -> None:
        tmp = self.folder / f".batch-{batch.iteration}.pkl.tmp"
        with open(tmp, "wb") as file:
            pickle.dump(batch, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.path(batch.iteration))

    def ready(self) -> list[int]:
        """The iterations whose batches are written and not yet taken."""
        return sorted(int(m.group(1)) for p in self.folder.iterdir() if (m := _BATCH.match(p.name)))

    def take(self, iteration: int, process: Any) -> RolloutBatch:
        """The batch for ``iteration`` (its file is then deleted), waiting while ``process`` (the writer: anything
        with ``is_alive()`` and ``exitcode``) lives.

        Raises:
            RolloutWorkerExited: the writer is gone and the batch is not there (whole).
        """
        path = self.path(iteration)
        while True:
            alive = process.is_alive()  # asked first: a batch written before the writer ended is found below
            if path.exists():
                with open(path, "rb") as file:
                    batch = pickle.load(file)  # a file written by the worker of this run (as the weights are)
                path.unlink()
                return batch
            if not alive:
                raise RolloutWorkerExited(
                    f"the rollout worker exited (code {process.exitcode}) before batch {iteration}; the run resumes "
                    "from its last checkpoint: run the same command again with resume_from_checkpoint=auto")
            time.sleep(_POLL_S)

    def clear(self) -> None:
        """Delete batches not taken and any half-written temporary file."""
        for path in self.folder.glob("*batch-*"):
            path.unlink(missing_ok=True)


class RolloutWorker:
    """The learner's handle on the worker process: start it, publish weights, take batches, stop it."""

    def __init__(self, config: Any, start: int, model_path: str, sampler_state: torch.Tensor, output_dir: Path):
        self.config = config
        self.files = PolicyFiles(output_dir / "async_policy")
        self.files.reset()
        self.batches = BatchFiles(self.files.folder)
        context = torch.multiprocessing.get_context("spawn")
        self.process = context.Process(
            target=_work, name="rollout-worker", daemon=True,
            args=(config.to_dict(), start, model_path, str(self.files.folder), state_bytes(sampler_state)))
        self.started = False

    def publish(self, state_dict: dict[str, torch.Tensor], version: int) -> None:
        """Hand the weights after iteration ``version`` to the worker (the first call also starts it)."""
        self.files.publish(state_dict, version)
        if not self.started:
            self.process.start()
            self.started = True

    def next_batch(self, iteration: int) -> RolloutBatch:
        """The batch for ``iteration``, waiting for it (:meth:`BatchFiles.take`).

        Raises:
            RolloutWorkerExited: the worker died (the run resumes from its last checkpoint).
            RuntimeError: the worker sent another iteration.
        """
        batch = self.batches.take(iteration, self.process)
        if batch.iteration != iteration:
            raise RuntimeError(f"the rollout worker sent batch {batch.iteration}, expected {iteration}")
        return batch

    def close(self) -> None:
        if self.started and self.process.is_alive():
            self.process.terminate()
        if self.started:
            self.process.join(timeout=10)
        self.batches.clear()


def state_bytes(state: torch.Tensor) -> bytes:
    return state.numpy().tobytes()  # plain bytes, as the rest of a batch


def state_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def _work(config_data: dict[str, Any], start: int, model_path: str, folder: str, sampler_state: bytes) -> None:
    """The worker process: play iterations ``start + 1 .. max_steps``, each with the newest weights once the bound
    allows it, and write each batch to its file (:class:`BatchFiles`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = config_from_dict(config_data)
    torch.set_num_threads(config.num_threads or 1)
    dist = Dist(0, 1, resolve_device(config.device))
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    actor = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).to(dist.device).eval()
    sampler = Sampler(config, actor, tokenizer, dist, model_path)
    sampler.load_state(state_tensor(sampler_state))
    groups = make_env_groups(config.train_env_manager, "train_env_manager", dist, config.train_seed_start,
                             fixed=False, config_seed=config.seed)
    groups.iteration = start
    files, parent = PolicyFiles(Path(folder)), multiprocessing.parent_process()
    batches = BatchFiles(files.folder)
    (files.folder / "worker.pid").write_text(str(os.getpid()))  # for a test that its orphan exits
    version = -1
    try:
        for iteration in range(start + 1, config.max_steps + 1):
            version = _newest_weights(files, actor, sampler, version,
                                      iteration - 1 - config.async_rollout.max_staleness, parent)
            tick = time.perf_counter()
            with torch.no_grad(), sampler.generation_context():
                trajectories = play(groups, sampler.train, config.train_env_manager.history_length, dist,
                                    prompt_fits(config, tokenizer))
            batches.put(RolloutBatch(iteration, version, trajectories, state_bytes(sampler.state()),
                                     time.perf_counter() - tick))
    finally:
        groups.close()


def _newest_weights(files: PolicyFiles, actor: torch.nn.Module, sampler: Any, have: int, needed: int,
                    parent: Any) -> int:
    """Load the newest published weights into ``actor`` (and from it into the sampler's engine: a no-op for ``hf``,
    which samples with ``actor``) if newer than version ``have``, first waiting until version ``needed`` exists;
    returns the version ``actor`` now holds. Exits the process if the learner is gone."""
    while True:
        versions = files.versions()
        if versions and versions[-1] >= needed:
            if versions[-1] == have:
                return have
            state = files.load(versions[-1])
            if state is not None:
                actor.load_state_dict(state)
                sampler.sync(actor)
                return versions[-1]
        if not parent.is_alive():
            raise SystemExit(0)
        time.sleep(_POLL_S)
