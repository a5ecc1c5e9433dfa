"""The output head on chosen positions only, and shared prompts run once.

A causal LM's output head (``lm_head``, hidden size H to vocabulary V) is a large share of a small model's compute:
the default model's vocabulary is about 20 times its width. Training needs logits only where a reply token is
predicted, a small share of the positions; :func:`logits_at` computes those and no others. The warm start's
:func:`~trainers.sft.warmstart.reply_loss` and the RL trainers' ``trainers.rl.ppo.token_logprobs`` both use
it. RL batches also repeat prompts (a group's members start from one state); :func:`logits_at_shared_prefixes`
gives the same logits with each distinct prompt run once (:func:`shared_prefixes` finds them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch  # noqa: TID253 - training math: imported only by trainers/

from agentgym_bench.rollout.hf import cache_argument, expandable


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
    with _head_at(model, predicts):
        return model(input_ids=input_ids, attention_mask=attention_mask).logits


@contextlib.contextmanager
def _head_at(model: Any, predicts: torch.Tensor) -> Iterator[None]:
    """Within the block, ``model``'s output head sees only the hidden states at ``predicts`` ((B, L-1) bool of a
    (B, L) forward)."""
    head = getattr(model, "module", model).get_output_embeddings()

    def chosen(_module: Any, args: tuple) -> tuple:
        return (args[0][:, :-1][predicts], *args[1:])  # (B, L, H) -> (M, H)

    handle = head.register_forward_pre_hook(chosen)
    try:
        yield
    finally:
        handle.remove()


def logits_at_shared_prefixes(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                              predicts: torch.Tensor) -> torch.Tensor:
    """:func:`logits_at`, with rows that start alike running their common start once.

    Each row is cut before its first set entry of ``predicts``: the prefix (the prompt, which predicts nothing) and
    the suffix (from the prompt's last token on, holding every wanted position). Rows with the same prefix share one
    forward pass of it (RL batches repeat prompts: the members of a group start from one state); the suffixes then
    run on the prefixes' KV cache, indexed to their rows, at their own positions. Causal attention makes a prefix's
    keys and values those of the whole row, so the logits are :func:`logits_at`'s up to float round-off, and so are
    the gradients, which reach a shared prefix from all its rows.

    Where no prefix repeats this is :func:`logits_at`, except in a process group of more than one (a DDP forward
    may be a collective, so every process makes two forward calls a batch). Not for a sharded model (FSDP2 frees a
    block's gathered weights after its forward, which a second forward before the backward would need) nor with
    gradient checkpointing (which turns the KV cache off): the caller decides (``trainers.rl.ppo.token_logprobs``).

    Args and Returns: as :func:`logits_at`, for right-padded rows.
    """
    cut, prefixes, row_prefix = shared_prefixes(input_ids, attention_mask, predicts)
    width = prefixes.shape[1] - 1
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    lockstep = torch.distributed.is_available() and torch.distributed.is_initialized() and \
        torch.distributed.get_world_size() > 1
    if (len(prefixes) == len(input_ids) and not lockstep) or width == 0:
        return logits_at(model, input_ids, attention_mask, predicts)
    name = cache_argument(getattr(model, "module", model))
    prefix_mask = (positions[:width] < prefixes[:, width:]).to(attention_mask.dtype)  # (P, width)
    with _head_at(model, torch.zeros_like(prefix_mask[:, 1:], dtype=torch.bool)):
        cache = getattr(model(input_ids=prefixes[:, :width], attention_mask=prefix_mask, use_cache=True), name)
    if not expandable(cache):
        return logits_at(model, input_ids, attention_mask, predicts)
    cache.batch_select_indices(row_prefix)
    rest = attention_mask.sum(1) - cut  # (B,) suffix lengths
    span = int(rest.max())
    take = (cut[:, None] + positions[:span]).clamp(max=input_ids.shape[1] - 1)  # (B, span) the suffix's positions
    suffix_mask = (positions[:span] < rest[:, None]).to(attention_mask.dtype)
    suffix_predicts = predicts.gather(1, take[:, :-1].clamp(max=predicts.shape[1] - 1)) & suffix_mask[:, 1:].bool()
    with _head_at(model, suffix_predicts):
        return model(input_ids=input_ids.gather(1, take) * suffix_mask, position_ids=take, use_cache=True,
                     attention_mask=torch.cat([prefix_mask[row_prefix], suffix_mask], 1), **{name: cache}).logits


def shared_prefixes(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    predicts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The rows' prefixes (the tokens before a row's first set entry of ``predicts``; a row without one is all
    prefix) and which rows share them.

    Args: as :func:`logits_at`, for right-padded rows.

    Returns:
        ``(cut, prefixes, row_prefix)``: (B,) each row's prefix length; (P, W + 1) the distinct prefixes, W = the
        longest, each its tokens (0 past its length) and then its length; (B,) each row's prefix in
        ``prefixes``.
    """
    cut = torch.where(predicts.any(1), predicts.to(torch.int8).argmax(1), attention_mask.sum(1))
    width = int(cut.max())
    inside = torch.arange(width, device=input_ids.device) < cut[:, None]
    prefixes, row_prefix = torch.unique(torch.cat([input_ids[:, :width] * inside, cut[:, None]], 1), dim=0,
                                        return_inverse=True)
    return cut, prefixes, row_prefix
