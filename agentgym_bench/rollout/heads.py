"""The output head on chosen positions only.

A causal LM's output head (``lm_head``, hidden size H to vocabulary V) is a large share of a small model's compute:
the default model's vocabulary is about 20 times its width. Training needs logits only where a reply token is
predicted, a small share of the positions; :func:`logits_at` computes those and no others. The warm start's
:func:`~trainers.sft.warmstart.reply_loss` and the RL trainers' ``trainers.rl.ppo.token_logprobs`` both use
it.
"""

from __future__ import annotations

from typing import Any

import torch  # noqa: TID253 - training math: imported only by trainers/


def logits_at(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
              predicts: torch.Tensor) -> torch.Tensor:
    """Logits at the positions that predict a chosen next token: ``(M, V)`` for the M set entries of ``predicts``.

    The same values as ``model(...).logits[:, :-1][predicts]`` (up to float round-off), without running the head on
    the other positions: a forward pre-hook on the output head (``get_output_embeddings()``) hands it only those
    positions' hidden states. The call goes through the model's own forward, so wrappers (DDP, FSDP2, peft) and
    gradient checkpointing see an ordinary forward pass, and any transformers version works.

    Args:
        model: a causal LM, or a wrapper with ``module`` (DDP) or ``get_output_embeddings`` (peft,
            ``trainers.runtime.lora.AdaptersOff``).
        input_ids: (B, L) long.
        attention_mask: (B, L).
        predicts: (B, L-1) bool; entry t of a row is set when position t's prediction (of token t+1) is wanted.

    Returns:
        (M, V) logits in the order of ``predicts.nonzero()`` (row by row), M = ``predicts.sum()``.
    """
    head = getattr(model, "module", model).get_output_embeddings()

    def chosen(_module: Any, args: tuple) -> tuple:
        return (args[0][:, :-1][predicts], *args[1:])  # (B, L, H) -> (M, H)

    handle = head.register_forward_pre_hook(chosen)
    try:
        return model(input_ids=input_ids, attention_mask=attention_mask).logits
    finally:
        handle.remove()
