"""The training loop of StarPO, StarPO-S and GiGPO: ``main(config)``.

One iteration, top to bottom (RAGEN arXiv 2504.20073; GiGPO arXiv 2505.10978)::

    rollout      num_env_groups x group_size episodes with the current policy (each rank plays its share)
    samples      one row per episode (StarPO, StarPO-S) or per turn (GiGPO; any      -- trainers/samples.py
                 algorithm with a history window)
    filter       StarPO-S: keep the env groups with the largest reward std
    forward      old log-probs, reference log-probs (KL), critic values (no grad)
    advantages   grpo / reinforce | gae | gigpo, then KL reward, whitening, clip    -- trainers/advantages.py
    adjust       rows per turn: make the row count a multiple of the mini-batch (batch_adjust_mode)
    update       ppo_epochs x mini-batches: clipped policy loss - entropy (+ KL loss),  -- trainers/losses.py
                 critic loss
    metrics      one JSON line; Echo Trap warning; evaluation on the validation seeds; checkpoint

The math lives in ``trainers.advantages`` / ``trainers.losses`` / ``trainers.masked``; this file only orchestrates.
Under ``torchrun`` every rank rolls out its share of env groups, the trajectories are gathered so every rank holds
the global batch, advantages are computed identically everywhere, and each mini-batch is split over the ranks with
DDP averaging the gradients: N processes make the same update as one process with the same global batch.

Dropout stays off (the models are kept in ``eval()`` mode, as TRL and verl disable it for RL), so a forward pass is a
function of the weights and the ratio of the first mini-batch is exactly 1.

Run: ``agentgym-bench train CONFIG [key=value ...]`` or ``torchrun --nproc_per_node N -m trainers.train CONFIG``.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from agentgym_bench.rollout.trajectory import Trajectory
from trainers import checkpoint as ckpt
from trainers.advantages import (
    clip_advantages,
    gae_advantages,
    gigpo_advantages,
    group_normalize,
    select_groups_by_std,
    step_gae_advantages,
)
from trainers.config import ConfigError, TrainConfig
from trainers.distributed import Dist, autocast, init_distributed
from trainers.losses import (
    agg_loss,
    approx_kl,
    entropy_from_logits,
    kl_penalty,
    logprobs_from_logits,
    ppo_policy_loss,
    value_loss,
)
from trainers.masked import explained_variance, masked_mean, masked_whiten
from trainers.metrics import EchoTrapRule, MetricsLog, plot_metrics, success_gain
from trainers.rollouts import Sampler, ShardGroups, evaluate, pass_at_k, play, rollout_metrics, seed_from
from trainers.samples import Samples, adjust_batch, step_samples, trajectory_samples

# ----------------------------------------------------------------------------------------------- models and state


@dataclass
class Models:
    """The networks of a run. ``actor`` / ``critic`` may be DDP wrappers; ``*_module`` are the bare models."""

    actor: torch.nn.Module
    tokenizer: Any
    critic: torch.nn.Module | None = None
    reference: torch.nn.Module | None = None

    @property
    def actor_module(self) -> torch.nn.Module:
        return getattr(self.actor, "module", self.actor)

    @property
    def critic_module(self) -> torch.nn.Module | None:
        return None if self.critic is None else getattr(self.critic, "module", self.critic)


def _model_path(config: TrainConfig) -> str:
    """``pretrain`` with ``~`` expanded if it is a local folder, else as given (a hub id)."""
    local = Path(config.pretrain).expanduser()
    return str(local) if local.exists() else config.pretrain


def _own_memory(model: torch.nn.Module) -> torch.nn.Module:
    """Copy every parameter into a fresh allocation (tied weights stay tied: they are one Parameter).

    ``from_pretrained`` can leave tensors inside the memory-mapped file at offsets that are not 64-byte aligned, and
    CPU kernels may then take another code path and round differently; with fresh copies a resumed run computes
    bit for bit what the uninterrupted run does."""
    for param in model.parameters():
        param.data = param.data.clone()
    return model


def load_models(config: TrainConfig, dist: Dist, checkpoint: Path | None = None) -> Models:
    """Actor and tokenizer (from the checkpoint or ``pretrain``), critic if ``gae``, frozen reference if a KL is used.

    The critic is ``AutoModelForTokenClassification`` with one label on the same weights (RAGEN / verl); its new
    value head is drawn from ``config.seed`` without touching the global RNG.
    """
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

    pretrain = _model_path(config)
    actor_path = checkpoint / "actor" if checkpoint else pretrain
    tokenizer = AutoTokenizer.from_pretrained(actor_path)
    actor = _own_memory(AutoModelForCausalLM.from_pretrained(actor_path, dtype=torch.float32)).to(dist.device).eval()
    critic = reference = None
    if config.uses_critic:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            critic = AutoModelForTokenClassification.from_pretrained(
                checkpoint / "critic" if checkpoint else pretrain, num_labels=1, dtype=torch.float32)
        critic = _own_memory(critic).to(dist.device).eval()
    if config.uses_reference:
        reference = AutoModelForCausalLM.from_pretrained(pretrain, dtype=torch.float32)
        reference = _own_memory(reference).to(dist.device).eval()
        reference.requires_grad_(False)
    if dist.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [dist.device.index] if dist.device.type == "cuda" else None
        actor = DDP(actor, device_ids=ids)
        critic = DDP(critic, device_ids=ids) if critic is not None else None
    return Models(actor, tokenizer, critic, reference)


def _schedule(config: TrainConfig):
    def factor(iteration: int) -> float:
        if iteration < config.warmup_steps:
            return (iteration + 1) / (config.warmup_steps + 1)
        progress = (iteration - config.warmup_steps) / max(1, config.max_steps - config.warmup_steps)
        if config.lr_scheduler_type == "linear":
            return max(0.0, 1 - progress)
        if config.lr_scheduler_type == "cosine":
            return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return 1.0

    return factor


def make_optimizers(config: TrainConfig, models: Models) -> tuple[dict[str, Any], dict[str, Any]]:
    """AdamW for the actor (and critic), each with a per-iteration LambdaLR schedule."""
    params = {"actor": (models.actor_module.parameters(), config.learning_rate)}
    if models.critic is not None:
        params["critic"] = (models.critic_module.parameters(), config.critic_learning_rate)
    optimizers = {name: torch.optim.AdamW(p, lr=lr, betas=config.adam_betas, weight_decay=config.weight_decay)
                  for name, (p, lr) in params.items()}
    schedulers = {name: torch.optim.lr_scheduler.LambdaLR(opt, _schedule(config)) for name, opt in optimizers.items()}
    return optimizers, schedulers


# ------------------------------------------------------------------------------------------------ forward passes


def _rows(samples: Samples, rows: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Input ids and attention mask of ``rows``, trimmed to their longest row, on ``device``."""
    length = int(samples.attention_mask[rows].sum(1).max())
    return (samples.input_ids[rows, :length].to(device), samples.attention_mask[rows, :length].to(device), length)


def token_logprobs(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float, with_entropy: bool,
                   mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(b, L-1) log-probs of tokens 1..L-1 given their prefix, and the entropies of those predictions.

    Logits are divided by the rollout temperature, as verl does, so the trained policy is the sampled one. With a
    (b, L-1) ``mask`` only those positions are computed (softmax over the vocabulary is the costly part with a large
    one); the others are 0.
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
    targets = input_ids[:, 1:]
    if mask is not None:
        logits, targets = logits[mask], targets[mask]
    logits = logits.float()
    if temperature != 1:
        logits = logits / temperature
    logprob = logprobs_from_logits(logits, targets)
    entropy = entropy_from_logits(logits) if with_entropy else None
    if mask is None:
        return logprob, entropy
    full = torch.zeros(mask.shape, dtype=logprob.dtype, device=logprob.device)
    return (full.masked_scatter(mask, logprob),
            None if entropy is None else torch.zeros_like(full).masked_scatter(mask, entropy))


def token_values(critic: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(b, L-1) value of the state before each of tokens 1..L-1 (the critic's output at the previous position)."""
    return critic(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1, 0].float()


@dataclass
class Batch:
    """Samples plus what the update needs, all token tensors (B, T-1) aligned with ``input_ids[:, 1:]``."""

    samples: Samples
    mask: torch.Tensor
    old_logprob: torch.Tensor
    advantages: torch.Tensor
    ref_logprob: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    returns: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.samples)

    def select(self, index: torch.Tensor) -> Batch:
        pick = {k: (None if v is None else v[index]) for k, v in vars(self).items() if k != "samples"}
        return Batch(samples=self.samples.select(index), **pick)


@torch.no_grad()
def score_samples(config: TrainConfig, models: Models, samples: Samples, dist: Dist) -> dict[str, torch.Tensor]:
    """Old log-probs, reference log-probs and critic values of every row; each rank scores a share, then gather."""
    n, width = len(samples), samples.input_ids.shape[1] - 1
    share = np.array_split(np.arange(n), dist.world_size)[dist.rank]
    wanted = {"old_logprob": config.enable_old_logprobs_recompute, "ref_logprob": models.reference is not None,
              "values": models.critic is not None}
    local = {k: torch.zeros(len(share), width) for k, on in wanted.items() if on}
    for start in range(0, len(share), config.micro_batch_size):
        _score_rows(config, models, samples, dist, local, share, start)
    parts = dist.gather(local)
    return {k: torch.cat([p[k] for p in parts]) for k in local}


def _score_rows(config: TrainConfig, models: Models, samples: Samples, dist: Dist, local: dict[str, torch.Tensor],
                share: np.ndarray, start: int) -> None:
    """Score one micro-batch of this rank's share into ``local``."""
    with autocast(config, dist):
        rows = torch.as_tensor(share[start:start + config.micro_batch_size])
        ids, att, length = _rows(samples, rows, dist.device)
        at = slice(start, start + len(rows))
        mask = samples.loss_mask[rows, 1:length].to(dist.device)
        if "old_logprob" in local:
            local["old_logprob"][at, : length - 1] = token_logprobs(
                models.actor_module, ids, att, config.temperature, False, mask)[0].cpu()
        if "ref_logprob" in local:
            local["ref_logprob"][at, : length - 1] = token_logprobs(
                models.reference, ids, att, config.temperature, False, mask)[0].cpu()
        if "values" in local:
            local["values"][at, : length - 1] = token_values(models.critic_module, ids, att).cpu()


# ---------------------------------------------------------------------------------------------------- advantages


def _norm_ids(config: TrainConfig, samples: Samples) -> torch.Tensor:
    grouping = config.reward_normalization.grouping
    if grouping == "traj_group_id":
        return samples.group_ids
    return samples.tag_ids if grouping == "tags" else torch.zeros_like(samples.group_ids)


def compute_advantages(config: TrainConfig, samples: Samples,
                       scored: dict[str, torch.Tensor]) -> tuple[Batch, dict[str, float]]:
    """Token advantages (and GAE returns) of every row: the estimator, the KL reward, whitening, clipping.

    Also returns GiGPO's diagnostics: the mean anchor-group size and the mean |A^S| (step-level part)."""
    mask = samples.loss_mask[:, 1:]
    old, ref, values = scored["old_logprob"], scored.get("ref_logprob"), scored.get("values")
    method = config.reward_normalization.method
    ids = _norm_ids(config, samples)
    kl_reward = None
    if config.init_kl_coef > 0:  # per-token penalty -beta * KL(pi || pi_ref), entering as a reward
        kl_reward = -config.init_kl_coef * torch.where(mask, kl_penalty(old, ref, config.kl_penalty), 0.0)
    returns = None
    info: dict[str, float] = {}
    if config.adv_estimator == "gae":  # the (normalised) episode score on the episode's last generated token (RAGEN)
        token_rewards = torch.zeros_like(old)
        last = torch.where(mask, torch.arange(mask.shape[1]), -1).max(dim=1).values  # last generated token per row
        final = _last_turn_rows(samples)
        token_rewards[final, last[final]] = group_normalize(samples.scores, ids, method)[final]
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
            per_row = gigpo.advantages
            info = {"reward/anchor_group_size": float(gigpo.anchor_sizes.float().mean()),
                    "reward/step_advantage_abs": float(gigpo.step_advantages.abs().mean())}
        else:  # grpo / reinforce: one group-normalised score per trajectory, on every row of the trajectory
            first = _episode_first_rows(samples)
            episode_norm = group_normalize(samples.scores[first], ids[first], method)
            per_row = episode_norm[torch.searchsorted(samples.episode_ids[first], samples.episode_ids)]
        advantages = per_row[:, None] * mask
        if kl_reward is not None:  # the KL reward's return-to-go within each row (ROLL's reinforce return)
            advantages = advantages + gae_advantages(kl_reward, torch.zeros_like(old), mask, 1.0, 1.0)[0]
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


def ppo_update(config: TrainConfig, models: Models, optimizers: dict[str, Any], batch: Batch, dist: Dist,
               rng: np.random.Generator) -> dict[str, float]:
    """``ppo_epochs`` passes of shuffled mini-batches; one optimiser step per mini-batch for the actor (and critic).

    Every rank holds the whole ``batch`` and draws the same permutation from ``rng``; each mini-batch is split into
    equal contiguous shares, one per rank, processed in micro-batches. Losses are scaled so that the gradient DDP
    averages equals the gradient of the global mini-batch loss.
    """
    stats = _Mean()
    clip_c = 1 + 2 * config.pg_clip if config.dual_clip_loss else None
    mini = config.ppo_mini_batch_size
    for _ in range(config.ppo_epochs):
        order = torch.as_tensor(rng.permutation(len(batch)))
        for start in range(0, len(batch), mini):
            chosen = order[start:start + mini]
            denominator = _denominator(config, batch.mask[chosen])
            mine = chosen[list(dist.shard(len(chosen)))]
            micro = [mine[i:i + config.micro_batch_size] for i in range(0, len(mine), config.micro_batch_size)]
            for k, rows in enumerate(micro):
                last = k == len(micro) - 1
                ids, att, length = _rows(batch.samples, rows, dist.device)
                part = batch.select(rows)
                cut = slice(0, length - 1)
                mask = part.mask[:, cut].to(dist.device)
                tokens = float(mask.sum())
                sync = contextlib.nullcontext() if last or not dist.enabled else models.actor.no_sync()
                with sync:
                    with autocast(config, dist):
                        logprob, entropy = token_logprobs(models.actor, ids, att, config.temperature, True, mask)
                    old = part.old_logprob[:, cut].to(dist.device)
                    pl = ppo_policy_loss(logprob, old, part.advantages[:, cut].to(dist.device),
                                         config.clip_low, config.clip_high, clip_c)
                    pg = agg_loss(pl.loss, mask, config.loss_agg_mode, denominator)
                    ent = agg_loss(entropy, mask, config.loss_agg_mode, denominator)
                    loss = pg - config.entropy_loss_coef * ent
                    if part.ref_logprob is not None:
                        kl = kl_penalty(logprob, part.ref_logprob[:, cut].to(dist.device), config.kl_penalty)
                        if config.use_kl_loss:
                            loss = loss + config.kl_loss_coef * agg_loss(kl, mask, config.loss_agg_mode, denominator)
                        stats.add("loss/kl", masked_mean(kl, mask), tokens)
                    (loss * dist.world_size).backward()
                stats.add("loss/policy", masked_mean(pl.loss, mask), tokens)
                stats.add("loss/entropy", masked_mean(entropy, mask), tokens)
                stats.add("loss/clipfrac", masked_mean(pl.clipped.float(), mask), tokens)
                stats.add("loss/approx_kl", approx_kl(logprob, old, mask), tokens)
                if clip_c is not None:
                    stats.add("loss/clipfrac_lower", masked_mean(pl.dual_clipped.float(), mask), tokens)
                if models.critic is not None:
                    sync = contextlib.nullcontext() if last or not dist.enabled else models.critic.no_sync()
                    with sync:
                        with autocast(config, dist):
                            values = token_values(models.critic, ids, att)
                        vl = value_loss(values, part.old_values[:, cut].to(dist.device),
                                        part.returns[:, cut].to(dist.device), config.value_clip)
                        (agg_loss(vl.loss, mask, config.loss_agg_mode, denominator) * dist.world_size).backward()
                    stats.add("critic/value_loss", masked_mean(vl.loss, mask), tokens)
                    stats.add("critic/clipfrac", masked_mean(vl.clipped.float(), mask), tokens)
            for name, optimizer in optimizers.items():
                module = models.actor_module if name == "actor" else models.critic_module
                norm = float(torch.nn.utils.clip_grad_norm_(module.parameters(), config.max_grad_norm))
                key = "loss/grad_norm" if name == "actor" else "critic/grad_norm"
                if math.isfinite(norm):
                    optimizer.step()
                else:  # a NaN/inf gradient would poison the weights: skip this step (verl does the same)
                    stats.add("warn/skipped_steps", 1.0, 1.0)
                optimizer.zero_grad(set_to_none=True)
                stats.add(key, norm if math.isfinite(norm) else float("nan"), 1.0 / dist.world_size)
    return stats.result(dist)


# ----------------------------------------------------------------------------------------------------- iteration


def _episode_first_rows(samples: Samples) -> torch.Tensor:
    """Index of one row per episode, in ascending episode id."""
    return torch.as_tensor(np.unique(samples.episode_ids.numpy(), return_index=True)[1])


def _last_turn_rows(samples: Samples) -> torch.Tensor:
    """Bool (B,): the row holds its episode's last turn (every row, for whole-episode rows)."""
    last = torch.full((int(samples.episode_ids.max()) + 1,), -1, dtype=torch.long)
    last = last.scatter_reduce(0, samples.episode_ids, samples.step_index, "amax")
    return samples.step_index == last[samples.episode_ids]


def build_samples(config: TrainConfig, trajectories: list[Trajectory], tokenizer: Any, max_length: int | None):
    if config.step_rows:
        return step_samples(trajectories, tokenizer, max_length=max_length)
    return trajectory_samples(trajectories, tokenizer, max_length=max_length)


def group_std_metrics(samples: Samples, keep: torch.Tensor | None) -> dict[str, float]:
    """Mean in-group std of the raw episode scores over all groups, and over the kept groups."""
    first = _episode_first_rows(samples)
    selection = select_groups_by_std(samples.scores[first], samples.group_ids[first], 1.0)
    out = {"reward/in_group_std": float(selection.group_std.mean())}
    if keep is not None:
        kept_groups = torch.isin(selection.group_ids, torch.unique(samples.group_ids[keep]))
        out["reward/in_group_std_kept"] = float(selection.group_std[kept_groups].mean())
    else:
        out["reward/in_group_std_kept"] = out["reward/in_group_std"]
    return out


def train_step(config: TrainConfig, models: Models, optimizers: dict[str, Any], trajectories: list[Trajectory],
               dist: Dist, rng: np.random.Generator) -> dict[str, float]:
    """Everything after the rollout: samples, filter, scoring, advantages, batch adjustment, update -> metrics."""
    max_length = getattr(models.actor_module.config, "max_position_embeddings", None)
    samples = build_samples(config, trajectories, models.tokenizer, max_length)
    record: dict[str, float] = {}
    keep = None
    if config.rollout_filter_ratio < 1:  # on one score per episode, then applied to all rows of the kept groups
        first = _episode_first_rows(samples)
        chosen = select_groups_by_std(samples.scores[first], samples.group_ids[first], config.rollout_filter_ratio,
                                      config.rollout_filter_type)
        keep = torch.isin(samples.group_ids, chosen.group_ids[chosen.group_kept])
    record.update(group_std_metrics(samples, keep))
    if keep is not None:
        samples = samples.select(keep)
    record["rollout/groups_kept"] = float(len(torch.unique(samples.group_ids)))
    scored = score_samples(config, models, samples, dist)
    if not config.enable_old_logprobs_recompute:
        scored["old_logprob"] = sampled_logprobs(trajectories, samples, config.step_rows)
    batch, info = compute_advantages(config, samples, scored)
    record.update(info)
    if config.enable_old_logprobs_recompute:
        gap = _rollout_logprob_gap(trajectories, samples, batch, config)
        if gap is not None:
            record["rollout/logprob_diff"] = gap
    if config.step_rows:
        index, added, removed = adjust_batch(len(batch), config.ppo_mini_batch_size, config.batch_adjust_mode, rng)
        batch = batch.select(torch.as_tensor(index))
        record.update({"rollout/batch_add_count": float(added), "rollout/batch_remove_count": float(removed)})
    record["rollout/samples"] = float(len(batch))
    record["reward/advantage_mean"] = float(masked_mean(batch.advantages, batch.mask))
    record["reward/advantage_abs"] = float(masked_mean(batch.advantages.abs(), batch.mask))
    if batch.old_values is not None:
        record["critic/value_mean"] = float(masked_mean(batch.old_values, batch.mask))
        record["critic/explained_variance"] = float(explained_variance(batch.old_values, batch.returns, batch.mask))
    record.update(ppo_update(config, models, optimizers, batch, dist, rng))
    return record


def sampled_logprobs(trajectories: list[Trajectory], samples: Samples, step_rows: bool) -> torch.Tensor:
    """(B, T-1) the sampler's log-probs of each row's generated tokens, aligned like :func:`token_logprobs`.

    Raises:
        ValueError: the backend reported no log-probs, or a row's generated tokens do not match them in number.
    """
    out = torch.zeros(samples.input_ids.shape[0], samples.input_ids.shape[1] - 1)
    mask = samples.loss_mask[:, 1:]
    for row, (episode, step) in enumerate(zip(samples.episode_ids.tolist(), samples.step_index.tolist(), strict=True)):
        turns = [trajectories[episode].turns[step]] if step_rows else trajectories[episode].turns
        if any(turn.logprobs is None for turn in turns):
            raise ValueError("the generation backend reported no log-probs; set enable_old_logprobs_recompute=true")
        values = torch.tensor([lp for turn in turns for lp in turn.logprobs])
        if len(values) != int(mask[row].sum()):
            raise ValueError("a row's generated tokens do not match the sampled log-probs; set "
                             "enable_old_logprobs_recompute=true")
        out[row, mask[row]] = values
    return out


def _rollout_logprob_gap(trajectories: list[Trajectory], samples: Samples, batch: Batch,
                        config: TrainConfig) -> float | None:
    """Mean |recomputed - sampled| log-prob over the generated tokens (temperature applied to both; top_p = 1).

    About 0 when the training rows hold exactly what the model read and sampled. Whole-episode rows differ after
    the first turn if a reply does not re-tokenise to its sampled ids (the model then read the re-tokenised text,
    e.g. an untrained model's stray special tokens); ``inf`` if the token counts disagree.
    """
    if config.top_p < 1 or any(turn.logprobs is None for t in trajectories for turn in t.turns):
        return None
    gaps = []
    for row, (episode, step) in enumerate(zip(samples.episode_ids.tolist(), samples.step_index.tolist(), strict=True)):
        turns = trajectories[episode].turns if not config.step_rows else [trajectories[episode].turns[step]]
        sampled = torch.tensor([lp for turn in turns for lp in turn.logprobs])
        recomputed = batch.old_logprob[row][batch.mask[row]]
        if len(sampled) != len(recomputed):
            return float("inf")
        gaps.append((recomputed - sampled).abs().mean())
    return float(torch.stack(gaps).mean())


# -------------------------------------------------------------------------------------------------------- main


@dataclass
class TrainResult:
    """What ``main`` returns: the run folder, every metrics record, and the first and last evaluations."""

    output_dir: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    first_eval: list[bool] = field(default_factory=list)
    last_eval: list[bool] = field(default_factory=list)


def _check_world(config: TrainConfig, dist: Dist) -> None:
    for name, value in [("train_env_manager.num_env_groups", config.train_env_manager.num_env_groups),
                        ("val_env_manager.num_env_groups", config.val_env_manager.num_env_groups),
                        ("ppo_mini_batch_size", config.ppo_mini_batch_size)]:
        if value % dist.world_size:
            raise ConfigError(f"{name}={value} must be divisible by the number of processes ({dist.world_size})")


def main(config: TrainConfig) -> TrainResult:
    """Run (or resume) one training run as configured; returns the metrics and the first/last evaluations."""
    started = time.perf_counter()
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    dist = init_distributed(config.device)
    _check_world(config, dist)
    out = Path(config.output_dir)
    resume = ckpt.find_checkpoint(out, config.resume_from_checkpoint)
    models = load_models(config, dist, resume)
    optimizers, schedulers = make_optimizers(config, models)
    rng = np.random.default_rng(seed_from(config.seed, 1))
    sampler = Sampler(config, models.actor_module, models.tokenizer, dist,
                      str(resume / "actor") if resume else _model_path(config))
    train_groups = ShardGroups(config.train_env_manager, dist, config.train_seed_start, fixed=False)
    val_groups = ShardGroups(config.val_env_manager, dist, config.val_seed_start, fixed=True)
    start, elapsed = 0, 0.0
    if resume is not None:
        state = ckpt.load_state(resume, dist, optimizers, schedulers)
        start, elapsed = state["step"], state["elapsed"]
        rng.bit_generator.state = state["numpy_rng"]
        sampler.load_state(state["policy_rng"])
    if dist.is_main:
        out.mkdir(parents=True, exist_ok=True)
        config.save(out / "config.yaml")
    log = MetricsLog(out / "metrics.jsonl", resume_step=start if resume else None) if dist.is_main else None
    history = log.history() if log else []
    result = TrainResult(out, records=history)
    rule = EchoTrapRule()
    val_seed = seed_from(config.seed, 3)
    t0 = started - elapsed  # time/total counts start-up (models, envs) too
    if resume is None:
        val, result.first_eval = evaluate(val_groups, sampler, config, dist, val_seed)
        _write(log, result, {"step": 0, **val, "time/total": time.perf_counter() - t0})
    bar = tqdm(range(start + 1, config.max_steps + 1), desc="train", unit="it", initial=start,
               total=config.max_steps, disable=not (config.progress and dist.is_main), file=sys.stderr)
    for step in bar:
        tick = time.perf_counter()
        train_groups.step = step - 1
        with autocast(config, dist):
            trajectories = play(train_groups, sampler.train, config.train_env_manager.history_length, dist)
        record: dict[str, Any] = {"step": step, **rollout_metrics(trajectories, "reward")}
        record["rollout/response_length"] = record.pop("reward/response_length")
        for key in ("turns", "format_valid", "action_valid"):
            record[f"rollout/{key}"] = record.pop(f"reward/{key}")
        record["reward/pass@k"] = pass_at_k(trajectories)
        record["time/rollout"] = time.perf_counter() - tick
        tock = time.perf_counter()
        record.update(train_step(config, models, optimizers, trajectories, dist, rng))
        sampler.sync(models.actor_module)
        for name, scheduler in schedulers.items():
            record["loss/lr" if name == "actor" else "critic/lr"] = scheduler.get_last_lr()[0]
            scheduler.step()
        record["time/update"] = time.perf_counter() - tock
        series = result.records + [record]
        record["warn/echo_trap"] = rule.check(*[[r.get(k, float("nan")) for r in series if "loss/grad_norm" in r]
                                                for k in ("reward/in_group_std", "loss/entropy", "loss/grad_norm")])
        if record["warn/echo_trap"] and dist.is_main:
            bar.write(f"step {step}: Echo Trap warning — reward std and entropy collapsed while the gradient norm "
                      "spiked (docs/trainers.md); consider a lower learning rate or the starpo_s preset")
        if step % config.eval_steps == 0 or step == config.max_steps:
            tock = time.perf_counter()
            val, result.last_eval = evaluate(val_groups, sampler, config, dist, val_seed)
            record.update(val)
            record["time/eval"] = time.perf_counter() - tock
        record["time/step"] = time.perf_counter() - tick
        record["time/total"] = time.perf_counter() - t0
        _write(log, result, record)
        bar.set_postfix({k.split("/")[-1]: round(record[k], 3) for k in ("reward/success", "val/success")
                         if k in record})
        if (config.save_steps and step % config.save_steps == 0) or step == config.max_steps:
            ckpt.save(out, step, models, optimizers, schedulers, dist, config, {
                "step": step, "elapsed": record["time/total"], "numpy_rng": rng.bit_generator.state,
                "policy_rng": sampler.state()})
    bar.close()
    if dist.is_main:
        plot_metrics(result.records, out / "curves.png", title=_title(config))
        if result.first_eval and result.last_eval:
            ckpt.write_json(out / "summary.json", {"val": success_gain(result.first_eval, result.last_eval),
                                                   "wall_time_s": time.perf_counter() - t0})
    train_groups.close()
    val_groups.close()
    return result


def _write(log: MetricsLog | None, result: TrainResult, record: dict[str, Any]) -> None:
    result.records.append(record)
    if log is not None:
        log.write(record)


def _title(config: TrainConfig) -> str:
    tags = ", ".join(config.train_env_manager.tags)
    return f"{config.preset or config.adv_estimator} on {tags} (lr {config.learning_rate:g})"


def cli(argv: list[str] | None = None) -> int:
    """``python -m trainers.train CONFIG [key=value ...]`` (what ``torchrun -m trainers.train`` runs)."""
    from agentgym_bench.commands.train import main as command_main

    return command_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(cli())
