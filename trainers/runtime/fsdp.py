"""The sharded strategy (``strategy: fsdp2``): PyTorch FSDP2, ``torch.distributed.fsdp.fully_shard``.

Each transformer block (the classes a Hugging Face model lists in ``_no_split_modules``: ``GPT2Block``,
``Qwen2DecoderLayer``, ...) becomes one FSDP unit and the whole model the root unit (embeddings, final norm, head),
as torchtitan and verl wrap them. Every parameter is then a ``DTensor`` sharded over the processes: a process holds
``1/N`` of the parameters, gradients and AdamW states, and each unit is all-gathered just before it computes and
freed after. Gradients are reduce-scattered (averaged over the processes, as DDP averages them), so the loop's loss
scaling is the same for both strategies.

What the loop must do differently, all here:

- **Collectives in lockstep.** A forward pass of a sharded model is a collective, so every process must make the
  same number of them: the scoring pass pads its micro-batches (:func:`forward_count`), and generation, whose
  length differs per process, runs with the whole model gathered once (:func:`gathered`: no collective per
  forward; the memory of one full copy of the weights, as a vLLM engine would take).
- **Gradient clipping** over sharded gradients: ``torch.nn.utils.clip_grad_norm_`` on ``DTensor`` gradients computes
  the norm of the *whole* gradient (a reduction over the processes) and returns it as a replicated ``DTensor``
  (:func:`norm_value`); every process scales its shard by the same factor.
- **Checkpoints**: full (unsharded) state dicts gathered to rank 0 (:func:`full_state_dict`,
  :func:`optimizer_state`), written in the same layout as DDP's, and on resume each process loads the full state
  and keeps its shard (:func:`load_optimizer_state`). ``docs/trainers.md`` says why not
  ``torch.distributed.checkpoint``.

Mixed precision: with ``dtype: bfloat16`` on a GPU the units compute in bfloat16 and reduce gradients in float32
(``MixedPrecisionPolicy``; parameters and optimiser states stay float32 shards); on a CPU everything is float32.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - trainers/ runs on torch


def is_sharded(model: Any) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def shard(model: torch.nn.Module, device: torch.device, dtype: str) -> torch.nn.Module:
    """Apply ``fully_shard`` to each transformer block of ``model`` and then to ``model`` (in place; the process
    group must exist). Frozen parameters (a LoRA base, a reference model) are sharded like the others."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy()
    if dtype == "bfloat16" and device.type == "cuda":
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    blocks = set(getattr(model, "_no_split_modules", None) or [])
    for module in model.modules():
        if type(module).__name__ in blocks:
            fully_shard(module, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def forward_count(rows: int, micro_batch_size: int, world_size: int) -> int:
    """Micro-batches each process runs when ``rows`` rows are split over the processes with ``numpy.array_split``
    (the first share is the largest): the same count everywhere, so sharded forwards stay in lockstep."""
    return math.ceil(math.ceil(rows / world_size) / micro_batch_size)


@contextlib.contextmanager
def gathered(model: Any):
    """The whole model unsharded for the duration (every process enters together), so that forward passes make no
    collective and processes may run different numbers of them (generation). A no-op for an unsharded model."""
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in model.modules() if isinstance(m, FSDPModule)] if is_sharded(model) else []
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
        unit.unshard()
    try:
        yield
    finally:
        for unit in units:  # back to fully_shard's default: reshard after forward, except the root
            unit.reshard()
            unit.set_reshard_after_forward(unit is not model, recurse=False)


def norm_value(norm: torch.Tensor) -> float:
    """The gradient norm ``clip_grad_norm_`` returned, as a float (a ``DTensor`` for sharded parameters)."""
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's whole state dict on CPU: gathered to rank 0 for a sharded model (every process must call; the
    others get ``{}``), else ``model.state_dict()``."""
    if not is_sharded(model):
        return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def replicated_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The whole state dict on every process (for pushing weights into each process's vLLM engine)."""
    if not is_sharded(model):
        return model.state_dict()
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v) for k, v in model.state_dict().items()}


def optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimiser's state for a checkpoint: ``optimizer.state_dict()``, or for a sharded model the full state
    gathered to rank 0 and keyed by parameter names (every process must call)."""
    if not is_sharded(model):
        return optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    return get_optimizer_state_dict(model, optimizer,
                                    options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Restore :func:`optimizer_state`'s output; for a sharded model each process keeps its shard of the full
    state."""
    if not is_sharded(model):
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    set_optimizer_state_dict(model, optimizer, optim_state_dict=state,
                             options=StateDictOptions(full_state_dict=True))


def fix_architectures(folder: Path, model: torch.nn.Module) -> None:
    """``save_pretrained`` names the model's class in ``config.json``; for a sharded model that is FSDP's subclass
    (``FSDPGPT2LMHeadModel``), which vLLM and ``from_pretrained`` do not know: write the model's own class."""
    if not is_sharded(model):
        return
    from torch.distributed.fsdp import FSDPModule

    plain = next(c for c in type(model).__mro__ if not issubclass(c, FSDPModule))
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["architectures"] = [plain.__name__]
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
