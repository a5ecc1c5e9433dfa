"""``dtype: auto``: the compute dtype chosen by measurement at the start of a run, and recorded.

Whether bfloat16 autocast is faster than float32 depends on the machine: on GPUs it is; on CPUs it depends on the
chip (measured on two 2-core machines of one kind: bfloat16 matmuls 4.6x float32 on one, 0.47x on the other;
benchmarks/iteration_split.md), so a fixed default is wrong on one of them. With ``dtype: auto`` a run decides once:

- on CUDA: ``bfloat16`` where the GPU supports it (no probe: it is always faster there), else ``float32``;
- on a CPU: :func:`time_step` times one forward + backward of the actor at a training batch's shape, in float32
  and under bfloat16 autocast, alternating, best of ``reps``; bfloat16 is chosen only if it is at least
  :data:`MARGIN` times faster.

Parameters, gradients and optimiser states stay float32 either way (autocast computes in bfloat16). The choice and
its timings go to ``compute_dtype.json`` in the run folder; a resumed run reads it back instead of measuring again,
so one run keeps one dtype (a fresh run measures again: the folder's record may be another run's). The RL trainer
(``dtype`` in its config) and the warm start (``dtype`` in ``SFTConfig``) both resolve it here. Evaluation and the
board's re-generation never use this: an ``hf:`` policy on a CPU computes in float32
(``agentgym_bench.rollout.hf.load_model``), so that *reproduced* keeps its meaning.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import torch  # noqa: TID253 - trainers/ runs on torch

FILE = "compute_dtype.json"
"""The recorded choice, in the run folder."""
MARGIN = 1.15
"""bfloat16 is chosen on a CPU only when it is at least this much faster: a probe of a few steps is noisy, and a
tie is not worth results that differ from float32's in their last bits."""


def autocast(dtype: str, device: torch.device) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on ``device`` (GPU or CPU) for ``dtype == "bfloat16"`` (parameters stay float32), else
    nothing. Forward passes run under it; backward passes outside, as torch recommends."""
    if dtype == "bfloat16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def time_step(model: torch.nn.Module, device: torch.device, dtype: str, rows: int = 64, length: int = 64,
              reps: int = 3) -> float:
    """Best of ``reps`` seconds of one forward + backward of ``model`` on a (rows, length) batch of fixed token ids
    in ``dtype`` (``float32``, or ``bfloat16`` autocast). Leaves no gradients behind and no random state touched
    (the token ids come from their own generator; the model is in eval mode, so no dropout draws)."""
    vocab = model.get_input_embeddings().num_embeddings
    ids = torch.randint(0, vocab, (rows, length), generator=torch.Generator().manual_seed(0)).to(device)
    best = float("inf")
    was_training = model.training
    model.eval()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            with autocast(dtype, device):
                logits = model(input_ids=ids).logits
            logits.float().mean().backward()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            best = min(best, time.perf_counter() - start)
            model.zero_grad(set_to_none=True)
    finally:
        model.train(was_training)
    return best


def probe(model: torch.nn.Module, device: torch.device, rounds: int = 2) -> dict[str, Any]:
    """The choice for ``dtype: auto`` on ``device`` with its evidence: ``{"dtype", "reason", "float32_s",
    "bfloat16_s"}`` (the timings ``None`` where nothing was timed)."""
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return {"dtype": "bfloat16" if ok else "float32", "float32_s": None, "bfloat16_s": None,
                "reason": "CUDA with bfloat16 support" if ok else "CUDA without bfloat16 support"}
    seconds: dict[str, float] = {"float32": float("inf"), "bfloat16": float("inf")}
    time_step(model, device, "float32", reps=1)  # warm-up: first calls allocate
    for _ in range(rounds):  # alternating, so a change in the machine's load hits both
        for dtype in seconds:
            seconds[dtype] = min(seconds[dtype], time_step(model, device, dtype))
    ratio = seconds["float32"] / seconds["bfloat16"]
    chosen = "bfloat16" if ratio >= MARGIN else "float32"
    return {"dtype": chosen, "float32_s": seconds["float32"], "bfloat16_s": seconds["bfloat16"],
            "reason": f"bfloat16 autocast {ratio:.2f}x float32 for a forward + backward at 64 x 64 tokens on this "
                      f"CPU (chosen at >= {MARGIN}x)"}


def recorded(out: Path) -> str:
    """The dtype recorded in run folder ``out`` by :func:`resolve`."""
    return json.loads((out / FILE).read_text())["dtype"]


def resolve(requested: str, device: torch.device, out: Path | None, model: torch.nn.Module | None, *,
            is_main: bool, resumed: bool, share=None) -> str:
    """The dtype a run computes in: ``requested`` unless it is ``auto``; then, for a ``resumed`` run, the run folder's
    recorded choice, else :func:`probe`'s, written there by the main process (``out=None``: not written). On a CPU
    the probe needs the actor: with ``model=None`` it returns ``auto`` (call again once the model is loaded); on CUDA
    it needs none, so a sharded model can be wrapped for the chosen dtype. ``share`` (a callable taking this
    process's record and returning rank 0's on every process, e.g. through a gather) makes every process use the
    main one's choice; every process runs the probe, so a sharded model's collectives stay in step."""
    if requested != "auto":
        return requested
    path = out / FILE if out is not None else None
    if resumed and path is not None and path.exists():
        return recorded(out)
    if model is None and device.type != "cuda":
        return "auto"
    record = probe(model, device)
    if share is not None:
        record = share(record)
    if is_main and path is not None:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")
    if is_main:
        print(f"[train] dtype auto: {record['dtype']} ({record['reason']})", flush=True)
    return record["dtype"]
