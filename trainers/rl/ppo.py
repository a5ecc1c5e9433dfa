"""Scoring and the PPO update: training rows in, token advantages and optimiser steps out.

- :func:`score_samples`: the forward passes without gradient (old log-probs, reference log-probs, critic values),
  each rank scoring a share of the rows.
- :func:`compute_advantages`: the configured estimator (``grpo``/``reinforce``, ``gae``, ``gigpo``), the reward
  KL penalty, reward clip, whitening and advantage clip -> a :class:`Batch`.
- :func:`ppo_update`: ``ppo_epochs`` passes of shuffled mini-batches (identical rows kept together and forwarded
  once), each split over the ranks and processed in micro-batches (:func:`micro_batch_loss`); one optimiser step per
  mini-batch.

The math itself is in :mod:`trainers.algos.advantages`, :mod:`trainers.algos.losses` and :mod:`trainers.algos.masked`;
the loop that calls these is :mod:`trainers.rl.train`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.rollout.heads import logits_at, logits_at_shared_prefixes, shared_prefixes
from trainers.algos.advantages import (
    clip_advantages,
    gae_advantages,
    gigpo_advantages,
    group_normalize,
    step_gae_advantages,
)
from trainers.algos.losses import (
    agg_loss,
    approx_kl,
    behaviour_weights,
    entropy_from_logits,
    kl_penalty,
    logprobs_from_logits,
    ppo_policy_loss,
    value_loss,
)
from trainers.algos.masked import masked_mean, masked_whiten
from trainers.rl.config import TrainConfig
from trainers.rl.samples import Samples, episode_first_rows
from trainers.runtime import fsdp
from trainers.runtime.distributed import Dist, autocast

# ------------------------------------------------------------------------------------------------ forward passes


def _rows(samples: Samples, rows: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Input ids and attention mask of ``rows``, trimmed to their longest row, on ``device``."""
    length = int(samples.attention_mask[rows].sum(1).max())
    return (samples.input_ids[rows, :length].to(device), samples.attention_mask[rows, :length].to(device), length)


def distinct_rows(*tensors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows of (b, ...) tensors taken together: ``(first, inverse)``, (u,) the first index of each
    distinct row and (b,) each row's position in ``first``, so that ``t[first][inverse]`` equals ``t``."""
    key = torch.cat([t.reshape(len(t), -1).long() for t in tensors], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    rows = torch.arange(len(inverse), device=inverse.device)
    first = torch.full((int(inverse.max()) + 1,), len(inverse), device=inverse.device)
    first = first.scatter_reduce(0, inverse, rows, "amin")
    return first, inverse


def token_logprobs(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float, with_entropy: bool, mask: torch.Tensor,
                   share_prefixes: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(b, L-1) log-probs of tokens 1..L-1 given their prefix, and the entropies of those predictions, at the
    positions of the (b, L-1) bool ``mask``; 0 elsewhere.

    Identical rows (the same tokens, padding and mask: the members of a group that saw the same state and sent the
    same reply, common in RL batches) go through the model once and share the outputs, so a loss on them still
    counts every row and the gradient is the same sum (:func:`distinct_rows`). Only the masked positions reach the
    output head and the softmax over the vocabulary (:func:`~agentgym_bench.rollout.heads.logits_at`, as the warm
    start's loss): with a large vocabulary and short replies they are most of the cost. Logits are divided by the
    rollout temperature, as verl does, so the trained policy is the sampled one. With ``share_prefixes`` (see
    :func:`may_share_prompts`), distinct rows that start with the same prompt run it once
    (:func:`~agentgym_bench.rollout.heads.logits_at_shared_prefixes`).
    """
    first, inverse = distinct_rows(input_ids * attention_mask, attention_mask, mask)
    input_ids, attention_mask, mask = input_ids[first], attention_mask[first], mask[first]  # (u, ...)
    head = logits_at_shared_prefixes if share_prefixes else logits_at
    logits = head(model, input_ids, attention_mask, mask).float()  # (M, V)
    if temperature != 1:
        logits = logits / temperature
    logprob = logprobs_from_logits(logits, input_ids[:, 1:][mask])  # (M,)
    full = torch.zeros(mask.shape, dtype=logprob.dtype, device=logprob.device)
    entropy = torch.zeros_like(full).masked_scatter(mask, entropy_from_logits(logits)) if with_entropy else None
    return full.masked_scatter(mask, logprob)[inverse], None if entropy is None else entropy[inverse]


def may_share_prompts(config: TrainConfig, models: Any) -> bool:
    """Whether :func:`token_logprobs` may run a batch's shared prompts once, which splits a forward in two (prompts,
    then the rest on their KV cache): not for a sharded model (FSDP2 frees a block's gathered weights after its
    forward, which the backward of the first of two forwards needs) nor with gradient checkpointing (which turns the
    KV cache off)."""
    return not config.gradient_checkpointing and not fsdp.is_sharded(models.actor_module)


def token_values(critic: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(b, L-1) value of the state before each of tokens 1..L-1 (the critic's output at the previous position);
    identical rows share one forward (:func:`distinct_rows`)."""
    first, inverse = distinct_rows(input_ids * attention_mask, attention_mask)
    values = critic(input_ids=input_ids[first], attention_mask=attention_mask[first]).logits[:, :-1, 0].float()
    return values[inverse]


@dataclass
class Batch:
    """Samples plus what the update needs, all token tensors (B, T-1) aligned with ``input_ids[:, 1:]``.

    ``old_logprob`` is ``None`` when the update's own first forward pass provides it (ROLL's
    ``enable_old_logprobs_recompute: false``); :func:`ppo_update` then fills it in. ``behav_logprob`` (asynchronous
    rollouts only) holds the log-probs of the stale policy that sampled the rows; ``old_logprob`` is then the proximal
    policy's and the loss is AReaL's decoupled objective (:func:`trainers.algos.losses.behaviour_weights`)."""

    samples: Samples
    mask: torch.Tensor
    old_logprob: torch.Tensor | None
    advantages: torch.Tensor
    ref_logprob: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    returns: torch.Tensor | None = None
    behav_logprob: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.samples)

    def select(self, index: torch.Tensor) -> Batch:
        pick = {k: (None if v is None else v[index]) for k, v in vars(self).items() if k != "samples"}
        return Batch(samples=self.samples.select(index), **pick)


@torch.no_grad()
def score_samples(config: TrainConfig, models: Any, samples: Samples, dist: Dist,
                  old_logprob: bool = True) -> dict[str, torch.Tensor]:
    """Old log-probs (if ``old_logprob``), reference log-probs and critic values of every row; each rank scores a
    share, then gather."""
    n, width = len(samples), samples.input_ids.shape[1] - 1
    share = np.array_split(np.arange(n), dist.world_size)[dist.rank]
    wanted = {"old_logprob": old_logprob, "ref_logprob": models.reference is not None,
              "values": models.critic is not None}
    local = {k: torch.zeros(len(share), width) for k, on in wanted.items() if on}
    micro = config.micro_batch_size
    steps = math.ceil(len(share) / micro)
    if fsdp.is_sharded(models.actor_module):  # sharded forwards are collectives: the same count on every rank
        steps = fsdp.forward_count(n, micro, dist.world_size)
    for start in range(0, steps * micro, micro):
        _score_rows(config, models, samples, dist, local, share, start)
    parts = dist.gather(local)
    return {k: torch.cat([p[k] for p in parts]) for k in local}


def _score_rows(config: TrainConfig, models: Any, samples: Samples, dist: Dist, local: dict[str, torch.Tensor],
                share: np.ndarray, start: int) -> None:
    """Score one micro-batch of this rank's share into ``local``. Past the end of the share (a sharded model's
    lockstep, :func:`trainers.runtime.fsdp.forward_count`) the forwards run on row 0 and nothing is kept."""
    with autocast(config, dist):
        rows = torch.as_tensor(share[start:start + config.micro_batch_size])
        at = slice(start, start + len(rows))
        if len(rows) == 0:
            rows, at = torch.zeros(1, dtype=torch.long), slice(0, 0)
        ids, att, length = _rows(samples, rows, dist.device)
        mask = samples.loss_mask[rows, 1:length].to(dist.device)
        keep = at.stop - at.start
        if "old_logprob" in local:
            local["old_logprob"][at, : length - 1] = token_logprobs(
                models.actor_module, ids, att, config.temperature, False, mask, may_share_prompts(config, models)
            )[0][:keep].cpu()
        if "ref_logprob" in local:
            local["ref_logprob"][at, : length - 1] = token_logprobs(
                models.reference, ids, att, config.temperature, False, mask, may_share_prompts(config, models)
            )[0][:keep].cpu()
        if "values" in local:
            local["values"][at, : length - 1] = token_values(models.critic_module, ids, att)[:keep].cpu()


# ---------------------------------------------------------------------------------------------------- advantages


def _norm_ids(config: TrainConfig, samples: Samples) -> torch.Tensor:
    grouping = config.reward_normalization.grouping
    if grouping == "traj_group_id":
        return samples.group_ids
    return samples.tag_ids if grouping == "tags" else torch.zeros_like(samples.group_ids)


def _episode_scores(config: TrainConfig, samples: Samples, ids: torch.Tensor) -> torch.Tensor:
    """(B,) each row's episode score normalised within its group, one value per *episode* (not per row, so an
    episode's weight does not depend on how many turn rows it has), then clipped to ``reward_clip``."""
    first = episode_first_rows(samples)
    normalised = group_normalize(samples.scores[first], ids[first], config.reward_normalization.method)
    return _reward_clip(config, normalised[torch.searchsorted(samples.episode_ids[first], samples.episode_ids)])


def _reward_clip(config: TrainConfig, values: torch.Tensor) -> torch.Tensor:
    return values if config.reward_clip is None else values.clamp(-config.reward_clip, config.reward_clip)


def compute_advantages(config: TrainConfig, samples: Samples, scored: dict[str, torch.Tensor],
                       kl_coef: float | None = None) -> tuple[Batch, dict[str, float]]:
    """Token advantages (and GAE returns) of every row: the estimator, the KL reward (coefficient ``kl_coef``,
    default ``init_kl_coef``), whitening, clipping.

    Also returns diagnostics: GiGPO's mean anchor-group size and mean |A^S| (step-level part), and with a reward KL
    the batch's KL (mean over rows of each row's mean) and the coefficient used."""
    mask = samples.loss_mask[:, 1:]
    old, ref, values = scored.get("old_logprob"), scored.get("ref_logprob"), scored.get("values")
    method = config.reward_normalization.method
    ids = _norm_ids(config, samples)
    kl_reward = None
    info: dict[str, float] = {}
    if config.kl_in_reward:  # per-token penalty -beta * KL(pi || pi_ref), entering as a reward
        beta = config.init_kl_coef if kl_coef is None else kl_coef
        kl = torch.where(mask, kl_penalty(old, ref, config.kl_penalty), 0.0)
        kl_reward = -beta * kl
        info = {"reward/kl": float((kl.sum(1) / mask.sum(1).clamp(min=1)).mean()), "reward/kl_coef": beta}
    returns = None
    if config.adv_estimator == "gae":  # the (normalised) episode score on the episode's last generated token (RAGEN)
        token_rewards = torch.zeros(mask.shape)
        last = torch.where(mask, torch.arange(mask.shape[1]), -1).max(dim=1).values  # last generated token per row
        final = _last_turn_rows(samples)
        token_rewards[final, last[final]] = _episode_scores(config, samples, ids)[final]
        if kl_reward is not None:
            token_rewards = token_rewards + kl_reward
        if config.step_rows:  # one row per turn: chain GAE across the turns of each episode
            advantages, returns = step_gae_advantages(token_rewards, values, mask, samples.episode_ids,
                                                      samples.step_index, config.gamma, config.lambd)
        else:
            advantages, returns = gae_advantages(token_rewards, values, mask, config.gamma, config.lambd)
    else:
        if config.adv_estimator == "gigpo":
            gigpo = gigpo_advantages(
                samples.step_rewards, ids, samples.episode_ids, samples.state_ids, samples.step_index,
                step_reward_gamma=config.step_reward_gamma, method=method,
                episode_reward_weight=config.episode_reward_weight, step_reward_weight=config.step_reward_weight)
            per_row = _reward_clip(config, gigpo.advantages)
            info |= {"reward/anchor_group_size": float(gigpo.anchor_sizes.float().mean()),
                    "reward/step_advantage_abs": float(gigpo.step_advantages.abs().mean())}
        else:  # grpo / reinforce: one group-normalised score per trajectory, on every row of the trajectory
            per_row = _episode_scores(config, samples, ids)
        advantages = per_row[:, None] * mask
        if kl_reward is not None:  # the KL reward's return-to-go within each row (ROLL's reinforce return)
            advantages = advantages + gae_advantages(kl_reward, torch.zeros_like(kl_reward), mask, 1.0, 1.0)[0]
    if config.whiten_advantages:
        advantages = masked_whiten(advantages, mask)
    if config.advantage_clip is not None:
        advantages = clip_advantages(advantages, config.advantage_clip)
    return Batch(samples, mask, old, torch.where(mask, advantages, 0.0), ref, values, returns), info


# -------------------------------------------------------------------------------------------------------- update


class _Mean:
    """Weighted means accumulated locally and combined over ranks."""

    def __init__(self) -> None:
        self.sums: dict[str, list[float]] = {}

    def add(self, key: str, value: torch.Tensor | float, weight: float) -> None:
        s = self.sums.setdefault(key, [0.0, 0.0])
        s[0] += float(value.detach() if isinstance(value, torch.Tensor) else value) * weight
        s[1] += weight

    def result(self, dist: Dist) -> dict[str, float]:
        merged: dict[str, list[float]] = {}
        for part in dist.gather(self.sums):
            for key, (total, weight) in part.items():
                m = merged.setdefault(key, [0.0, 0.0])
                m[0] += total
                m[1] += weight
        return {k: (t / w if w else float("nan")) for k, (t, w) in merged.items()}


def _denominator(config: TrainConfig, mask: torch.Tensor) -> float:
    """The global mini-batch's token count (``token-mean``) or non-empty-row count, for ``agg_loss``."""
    return float(mask.sum() if config.loss_agg_mode == "token-mean" else mask.any(-1).sum())


def ppo_update(config: TrainConfig, models: Any, optimizers: dict[str, Any], batch: Batch, dist: Dist,
               rng: np.random.Generator, update_actor: bool = True) -> dict[str, float]:
    """``ppo_epochs`` passes of shuffled mini-batches; one optimiser step per mini-batch for the actor (and critic).

    Every rank holds the whole ``batch`` and draws the same order from ``rng`` (:func:`shuffled_together`); each
    mini-batch is split into equal contiguous shares, one per rank, processed in micro-batches. Losses are scaled
    so that the gradient DDP averages equals the gradient of the global mini-batch loss. ``update_actor=False``
    trains only the critic (ROLL's ``critic_warmup``). A ``batch.old_logprob`` of ``None`` is filled from the first
    epoch's forward pass (valid because the weights have not moved before the only mini-batch's step).
    """
    stats = _Mean()
    mini = config.ppo_mini_batch_size
    fill = batch.old_logprob is None
    if fill:
        if len(batch) > mini:
            raise ValueError("old log-probs from the update's forward pass need one mini-batch per epoch; "
                             "recompute them")
        batch.old_logprob = torch.zeros(batch.mask.shape)
    with _update_mode(config, models):
        for epoch in range(config.ppo_epochs):
            _epoch(config, models, optimizers, batch, dist, rng, stats, update_actor, fill and epoch == 0)
            if fill and epoch == 0 and dist.enabled:  # each rank filled its own rows; later epochs reshuffle them
                batch.old_logprob = torch.stack(dist.gather(batch.old_logprob)).sum(0)
    return stats.result(dist)


@contextlib.contextmanager
def _update_mode(config: TrainConfig, models: Any):
    """Train mode during the update when gradient checkpointing needs it (dropout is 0 then), eval mode after."""
    modules = [m for m in (models.actor_module, models.critic_module) if m is not None]
    if config.gradient_checkpointing:
        for module in modules:
            module.train()
    try:
        yield
    finally:
        for module in modules:
            module.eval()


def shuffled_together(batch: Batch, rng: np.random.Generator) -> torch.Tensor:
    """(B,) a random order of ``batch``'s rows in which rows with the same prompt are adjacent, and among them
    identical rows (:func:`distinct_rows`): the prompts (:func:`~agentgym_bench.rollout.heads.shared_prefixes`) in a
    random order, each followed by its distinct rows in a random order, each followed by its copies. Mini-batches cut
    from it hold a prompt's rows together, so the prompt goes through the model once a mini-batch and a row once
    (verl likewise keeps a prompt's responses in one mini-batch); every row is still in exactly one mini-batch an
    epoch."""
    samples = batch.samples
    _, row = distinct_rows(samples.input_ids * samples.attention_mask, samples.attention_mask, samples.loss_mask)
    _, _, prompt = shared_prefixes(samples.input_ids, samples.attention_mask, samples.loss_mask[:, 1:])
    key = _random_ranks(prompt, rng) * len(row) + _random_ranks(row, rng)
    return torch.sort(key, stable=True).indices


def _random_ranks(ids: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """(B,) for (B,) ids in 0..n-1, each id's place in a random order of 0..n-1."""
    place = torch.empty(int(ids.max()) + 1, dtype=torch.long)
    place[torch.as_tensor(rng.permutation(len(place)))] = torch.arange(len(place))
    return place[ids]


def _epoch(config: TrainConfig, models: Any, optimizers: dict[str, Any], batch: Batch, dist: Dist,
           rng: np.random.Generator, stats: _Mean, update_actor: bool, fill_old: bool) -> None:
    """One pass over ``batch`` in shuffled mini-batches, one optimiser step each."""
    mini = config.ppo_mini_batch_size
    order = shuffled_together(batch, rng)
    for start in range(0, len(batch), mini):
        chosen = order[start:start + mini]
        denominator = _denominator(config, batch.mask[chosen])
        mine = chosen[list(dist.shard(len(chosen)))]
        micro = [mine[i:i + config.micro_batch_size] for i in range(0, len(mine), config.micro_batch_size)]
        for k, rows in enumerate(micro):
            micro_batch_loss(config, models, batch, rows, denominator, dist, stats, update_actor,
                             sync=k == len(micro) - 1, fill_old=fill_old)
        _optimizer_steps(config, models, optimizers, dist, stats, update_actor)


def _no_sync(model: torch.nn.Module, sync: bool, dist: Dist) -> contextlib.AbstractContextManager:
    """DDP's ``no_sync`` except on the micro-batch that ends a mini-batch (gradient accumulation). FSDP2 reduces
    every micro-batch's gradient into the shards (holding whole unreduced gradients would undo the sharding)."""
    from torch.nn.parallel import DistributedDataParallel

    return model.no_sync() if not sync and isinstance(model, DistributedDataParallel) else contextlib.nullcontext()


@dataclass
class MicroBatch:
    """One micro-batch: rows of a :class:`Batch` and what their loss needs, token tensors on the device.

    Attributes:
        rows: (b,) indices of the rows in the batch.
        part: the rows' :class:`Batch` (``batch.select(rows)``, on the CPU).
        input_ids, attention_mask: (b, L) of the rows, trimmed to their longest (``L``), on the device.
        mask: (b, L-1) the rows' loss mask (position ``t`` predicts token ``t + 1``), on the device.
        tokens: the trained tokens (``mask.sum()``), the weight of the micro-batch's metrics.
        denominator: the mini-batch's loss denominator (:func:`_denominator`).
    """

    rows: torch.Tensor
    part: Batch
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    mask: torch.Tensor
    tokens: float
    denominator: float

    @classmethod
    def of(cls, batch: Batch, rows: torch.Tensor, denominator: float, device: torch.device) -> MicroBatch:
        ids, att, length = _rows(batch.samples, rows, device)
        part = batch.select(rows)
        mask = part.mask[:, : length - 1].to(device)
        return cls(rows, part, ids, att, mask, float(mask.sum()), denominator)

    def tokens_of(self, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
        """A (b, T-1) tensor of ``part`` trimmed to the micro-batch's positions, on ``device``."""
        return tensor[:, : self.mask.shape[1]].to(device)


def micro_batch_loss(config: TrainConfig, models: Any, batch: Batch, rows: torch.Tensor, denominator: float,
                     dist: Dist, stats: _Mean, update_actor: bool, sync: bool, fill_old: bool = False) -> None:
    """Forward and backward of one micro-batch (``rows`` of ``batch``): the clipped policy loss minus the entropy
    bonus (plus the KL loss) for the actor, the clipped value loss for the critic; metrics into ``stats``.
    ``fill_old``: this forward pass provides the old log-probs (written into ``batch.old_logprob``)."""
    micro = MicroBatch.of(batch, rows, denominator, dist.device)
    if update_actor:
        with _no_sync(models.actor, sync, dist):
            _actor_loss(config, models, batch, micro, dist, stats, fill_old)
    if models.critic is not None:
        with _no_sync(models.critic, sync, dist):
            _critic_loss(config, models, micro, dist, stats)


def _actor_loss(config: TrainConfig, models: Any, batch: Batch, micro: MicroBatch, dist: Dist, stats: _Mean,
                fill_old: bool) -> None:
    """The actor's loss of ``micro``, backward; ``fill_old``: its log-probs are the old ones (into ``batch``)."""
    part, mask, tokens, denominator = micro.part, micro.mask, micro.tokens, micro.denominator
    clip_c = config.dual_clip_bound
    with autocast(config, dist):
        logprob, entropy = _actor_logprobs(config, models, micro, rows_without_gradient(config, models, part))
    if fill_old:  # ROLL's reuse: the first forward pass at the rollout's weights gives them
        batch.old_logprob[micro.rows, : mask.shape[1]] = logprob.detach().float().cpu()
        old = logprob.detach()
    else:
        old = micro.tokens_of(part.old_logprob, dist.device)
    pl = ppo_policy_loss(logprob, old, micro.tokens_of(part.advantages, dist.device), config.clip_low,
                         config.clip_high, clip_c)
    policy_loss = pl.loss
    if part.behav_logprob is not None:  # decoupled PPO (asynchronous rollouts): old = proximal policy
        weight, _ = behaviour_weights(old, micro.tokens_of(part.behav_logprob, dist.device),
                                      config.async_rollout.behaviour_weight_cap)
        policy_loss = policy_loss * weight
    loss = agg_loss(policy_loss, mask, config.loss_agg_mode, denominator)
    loss = loss - config.entropy_loss_coef * agg_loss(entropy, mask, config.loss_agg_mode, denominator)
    if part.ref_logprob is not None:
        ref = micro.tokens_of(part.ref_logprob, dist.device)
        if config.use_kl_loss:
            kl = kl_penalty(logprob, ref, config.kl_loss_type)
            loss = loss + config.kl_loss_coef * agg_loss(kl, mask, config.loss_agg_mode, denominator)
        else:
            kl = kl_penalty(logprob, ref, config.kl_penalty)
        stats.add("loss/kl", masked_mean(kl, mask), tokens)
    (loss * dist.world_size).backward()
    stats.add("loss/policy", masked_mean(policy_loss, mask), tokens)
    stats.add("loss/entropy", masked_mean(entropy, mask), tokens)
    stats.add("loss/clipfrac", masked_mean(pl.clipped.float(), mask), tokens)
    stats.add("loss/approx_kl", approx_kl(logprob, old, mask), tokens)
    if clip_c is not None:
        stats.add("loss/clipfrac_lower", masked_mean(pl.dual_clipped.float(), mask), tokens)


def rows_without_gradient(config: TrainConfig, models: Any, part: Batch) -> torch.Tensor | None:
    """Bool (b,): the rows of ``part`` whose loss has no gradient, which the update then forwards without one (the
    same log-probs and entropies without a backward, about two thirds of a row's cost); ``None`` where any row's may.

    The clipped policy loss of a token is its advantage times a function of its ratio (also with the dual clip and
    the behaviour weight), so a row whose advantages are all 0 adds nothing to the gradient: in GiGPO's batches the
    members of all-success and all-fail groups with no step advantage, about a third to a half of the rows. Not
    when a term every row carries is in the loss (the entropy bonus, the KL loss), nor for a sharded model, whose
    forwards are collectives and must be as many on every process. At least one row keeps its gradient, so that
    every micro-batch has a backward (DDP reduces the gradients in it)."""
    kl_loss = config.use_kl_loss and part.ref_logprob is not None
    if config.entropy_loss_coef != 0 or kl_loss or fsdp.is_sharded(models.actor_module):
        return None
    idle = ~(part.advantages != 0).any(1)
    if idle.all():
        idle[0] = False
    return idle if idle.any() else None


def _actor_logprobs(config: TrainConfig, models: Any, micro: MicroBatch,
                    idle: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(b, L-1) log-probs and entropies of ``micro``'s rows (:func:`token_logprobs`); the ``idle`` rows
    (:func:`rows_without_gradient`) forwarded without gradient, through the unwrapped model (no DDP hooks)."""
    share = may_share_prompts(config, models)
    if idle is None:
        return token_logprobs(models.actor, micro.input_ids, micro.attention_mask, config.temperature, True,
                              micro.mask, share)
    idle = idle.to(micro.mask.device)
    logprob = torch.zeros(micro.mask.shape, device=micro.mask.device)
    entropy = torch.zeros_like(logprob)
    for rows, model, grad in ((idle, models.actor_module, False), (~idle, models.actor, True)):
        length = int(micro.attention_mask[rows].sum(1).max())
        with torch.set_grad_enabled(grad):
            part = token_logprobs(model, micro.input_ids[rows, :length], micro.attention_mask[rows, :length],
                                  config.temperature, True, micro.mask[rows, : length - 1], share)
        logprob[rows, : length - 1], entropy[rows, : length - 1] = part
    return logprob, entropy


def _critic_loss(config: TrainConfig, models: Any, micro: MicroBatch, dist: Dist, stats: _Mean) -> None:
    """The critic's clipped value loss of ``micro``, backward."""
    with autocast(config, dist):
        values = token_values(models.critic, micro.input_ids, micro.attention_mask)
    vl = value_loss(values, micro.tokens_of(micro.part.old_values, dist.device),
                    micro.tokens_of(micro.part.returns, dist.device), config.value_clip)
    (agg_loss(vl.loss, micro.mask, config.loss_agg_mode, micro.denominator) * dist.world_size).backward()
    stats.add("critic/value_loss", masked_mean(vl.loss, micro.mask), micro.tokens)
    stats.add("critic/clipfrac", masked_mean(vl.clipped.float(), micro.mask), micro.tokens)


def _optimizer_steps(config: TrainConfig, models: Any, optimizers: dict[str, Any], dist: Dist, stats: _Mean,
                     update_actor: bool) -> None:
    """Clip each model's gradient norm and step its optimiser; a non-finite norm skips the step (verl)."""
    for name, optimizer in optimizers.items():
        if name == "actor" and not update_actor:
            continue
        module = models.actor_module if name == "actor" else models.critic_module
        # over sharded (FSDP2) gradients the norm is the whole gradient's, reduced over the processes
        norm = fsdp.norm_value(torch.nn.utils.clip_grad_norm_(module.parameters(), config.max_grad_norm))
        if math.isfinite(norm):
            optimizer.step()
        else:  # a NaN/inf gradient would poison the weights
            stats.add("warn/skipped_steps", 1.0, 1.0)
        optimizer.zero_grad(set_to_none=True)
        stats.add("loss/grad_norm" if name == "actor" else "critic/grad_norm", norm if math.isfinite(norm)
                  else float("nan"), 1.0 / dist.world_size)


def _last_turn_rows(samples: Samples) -> torch.Tensor:
    """Bool (B,): the row holds its episode's last turn (every row, for whole-episode rows)."""
    last = torch.full((int(samples.episode_ids.max()) + 1,), -1, dtype=torch.long)
    last = last.scatter_reduce(0, samples.episode_ids, samples.step_index, "amax")
    return samples.step_index == last[samples.episode_ids]

