"""Published weights: each model entry of a committed board ships its weights in the repository, beside the board.

``leaderboards/<board>/models/<slug>/`` is an ordinary Hugging Face model folder (``config.json``, the tokenizer
files, ``model.safetensors``) with the weights rounded to bfloat16: half the size of float32, so the suite's models
(1.3-1.7M parameters) take 2.5-3.4 MB each and a board's entries stay well under 25 MB together (the repository
travels whole to the GPU machines, 64 MiB at most). The entry is evaluated from exactly that folder: on a CPU
:func:`~agentgym_bench.rollout.hf.load_model` computes in float32, into which bfloat16 converts exactly,
so anyone with a clone re-generates the board's episodes from the file that was scored
(``agentgym-bench reproduce``). Rounding changes a trained model a little, so a published model is evaluated anew,
never credited with its source's score.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentgym_bench.errors import UserError
from agentgym_bench.files import usual_modes
from agentgym_bench.leaderboard.folder import MODELS, board_path, slugify


def published_path(board: str | os.PathLike, name: str) -> Path:
    """``<board>/models/<slug of name>``."""
    return Path(board) / MODELS / slugify(name)


def publish_model(source: str | os.PathLike, board: str | os.PathLike, name: str, *, replace: bool = False) -> Path:
    """Write the model of ``source`` (a Hugging Face folder, e.g. a run's ``actor/``) to :func:`published_path`, its
    weights rounded to bfloat16, with its tokenizer; returns the folder.

    Raises:
        UserError: ``source`` holds no loadable model, or the folder exists and ``replace`` is false.
    """
    import torch

    from agentgym_bench.rollout.hf import load_model, no_progress_bars  # noqa: PLC0415 - brings torch

    target = board_path(board, MODELS, slugify(name))  # neither models/ nor the model's folder a link
    if target.exists() and not replace:
        raise UserError(f"{target} exists; pass --replace to overwrite the published model of {name!r}")
    model, tokenizer = load_model(source)
    staging = board_path(board, MODELS, f".staging-{target.name}")
    shutil.rmtree(staging, ignore_errors=True)
    with no_progress_bars():
        model.to(torch.bfloat16).save_pretrained(staging)
        tokenizer.save_pretrained(staging)
    usual_modes(staging)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return target
