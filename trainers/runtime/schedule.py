"""Learning-rate schedules of every trainer: the factor of the peak learning rate at each optimiser step, for
``torch.optim.lr_scheduler.LambdaLR``.

The RL loop steps its schedule once per iteration (:func:`iteration_schedule`, ``lr_scheduler_type`` and
``warmup_steps`` of the config); the warm start once per optimiser step (:func:`warm_start_schedule`). Both decay with
:func:`decay`. Their warm-ups count steps one apart (the RL loop's reaches the peak one step after its last warm-up
step, the warm start's on it, then decays from the step after); the warm start keeps its own count so that the
published checkpoint is re-made bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

SCHEDULERS = ("constant", "linear", "cosine")
"""Decay shapes after the warm-up: ``constant`` (RAGEN), ``linear`` or ``cosine`` to 0 at the last step."""


def decay(kind: str, progress: float) -> float:
    """The factor ``kind`` (one of :data:`SCHEDULERS`) gives at ``progress``, the share of the decay steps done
    (cosine holds 0 after 1; linear does not go below 0)."""
    if kind == "linear":
        return max(0.0, 1 - progress)
    if kind == "cosine":
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return 1.0


def iteration_schedule(kind: str, warmup_steps: int, max_steps: int) -> Callable[[int], float]:
    """The RL loop's factor at iteration ``i``: ``(i + 1) / (warmup_steps + 1)`` during the warm-up, then
    :func:`decay` over the remaining ``max_steps - warmup_steps`` iterations."""

    def factor(iteration: int) -> float:
        if iteration < warmup_steps:
            return (iteration + 1) / (warmup_steps + 1)
        return decay(kind, (iteration - warmup_steps) / max(1, max_steps - warmup_steps))

    return factor


def warm_start_schedule(warmup: int, total: int) -> Callable[[int], float]:
    """The warm start's factor at step ``s`` of ``total``: linear warm-up over ``warmup`` steps, then cosine decay,
    ``min((s + 1) / warmup, cosine((s + 1 - warmup) / (total - warmup)))``."""
    return lambda s: min((s + 1) / warmup, decay("cosine", (s + 1 - warmup) / max(1, total - warmup)))
