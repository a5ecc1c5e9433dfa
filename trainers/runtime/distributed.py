"""The little the loop needs from ``torch.distributed``: set-up under ``torchrun``, object gathering, sharding.

Launched plainly (no ``WORLD_SIZE`` in the environment) everything here is a no-op for one process. Under
``torchrun --nproc_per_node N`` the process group uses ``gloo`` on CPU and ``nccl`` on GPU, and each rank takes the
GPU of its ``LOCAL_RANK``. ``torchrun --nproc_per_node 1`` joins a group of one only for ``strategy: fsdp2``
(``init_distributed(..., join_single=True)``), so that FSDP2 shards over it as over several processes.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, TypeVar

import torch  # noqa: TID253 - trainers/ runs on torch
import torch.distributed as dist  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.rollout.hf import check_device
from trainers.runtime import compute_dtype

T = TypeVar("T")


@dataclass(frozen=True)
class Dist:
    """This process's place in the job."""

    rank: int
    world_size: int
    device: torch.device
    grouped: bool = False
    """In a ``torch.distributed`` process group: every launch of several processes, and a ``torchrun`` launch of
    one with ``join_single`` (FSDP2 then shards over a group of one)."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def shard(self, n: int) -> range:
        """The contiguous block of ``range(n)`` that this rank owns (``n`` divisible by the world size)."""
        if n % self.world_size:
            raise ValueError(f"{n} items cannot be split evenly over {self.world_size} processes")
        per = n // self.world_size
        return range(self.rank * per, (self.rank + 1) * per)

    def hardware(self) -> dict[str, Any]:
        """What the run trained on, for its ``summary.json``: ``{"processes": N, "device": "cpu"}``, or the GPU's
        name (``torch.cuda.get_device_name``) for a CUDA device."""
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else self.device.type
        return {"processes": self.world_size, "device": name}

    def gather(self, obj: T) -> list[T]:
        """Every rank's ``obj``, in rank order (``[obj]`` for one process)."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def autocast(config: Any, job: Dist) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on the job's device (GPU or CPU) when ``config.dtype`` is ``bfloat16`` (parameters stay
    float32), else nothing."""
    return compute_dtype.autocast(config.dtype, job.device)


def resolve_device(device: str, local_rank: int = 0) -> torch.device:
    """``auto`` -> ``cuda`` if available else ``cpu``; a bare ``cuda`` under torchrun -> ``cuda:LOCAL_RANK``; a name
    that is no device, or CUDA without a GPU: a one-line error (:func:`~agentgym_bench.rollout.hf.check_device`)."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        device = f"cuda:{local_rank}"
    return check_device(device)


def init_distributed(device: str, join_single: bool = False) -> Dist:
    """Join the ``torchrun`` process group if launched by it (idempotent), else a single process. A launch of one
    process joins a group of one only with ``join_single`` (and a rendezvous address, or a group already made)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1 and not (join_single and (dist.is_initialized() or "MASTER_ADDR" in os.environ)):
        return Dist(0, 1, resolve_device(device))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    resolved = resolve_device(device, local_rank)
    if not dist.is_initialized():
        backend = "nccl" if resolved.type == "cuda" else "gloo"
        if resolved.type == "cuda":
            torch.cuda.set_device(resolved)
        dist.init_process_group(backend=backend)
    return Dist(dist.get_rank(), dist.get_world_size(), resolved, grouped=True)


def shutdown_distributed(*, together: bool = False) -> None:
    """Leave the process group. ``together`` (a clean finish) waits for every process first: a gloo process that
    tears down while a peer is still working can abort ("terminate called without an active exception"). After an
    error the peers may never arrive, so the default leaves at once; idempotent."""
    if dist.is_initialized():
        if together:
            dist.barrier()
        dist.destroy_process_group()
