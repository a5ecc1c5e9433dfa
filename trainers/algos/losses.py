"""Losses and token-level quantities for PPO-style updates on masked (B, T) tensors.

Each loss returns its (B, T) loss matrix (plus indicators for the clip fractions); :func:`agg_loss` is the one
place that reduces a matrix to a scalar. Shapes: B sequences (rows), T token positions, V vocabulary size.
Nothing here reads a config, logs, or calls ``.item()``; see docs/trainers-math.md for the formulas and sources.
"""

from typing import NamedTuple

import torch  # noqa: TID253 - trainers/ runs on torch

from trainers.algos.masked import masked_mean

__all__ = [
    "AGG_MODES",
    "KL_ESTIMATORS",
    "PolicyLoss",
    "ValueLoss",
    "adaptive_kl_coef",
    "agg_loss",
    "approx_kl",
    "behaviour_weights",
    "entropy_from_logits",
    "kl_penalty",
    "logprobs_from_logits",
    "ppo_policy_loss",
    "value_loss",
]

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")

# Canonical names k1/k2/k3 (Schulman, "Approximating KL Divergence", 2020) plus the verl/ROLL spellings.
KL_ESTIMATORS = {"k1": "k1", "kl": "k1", "k2": "k2", "mse": "k2", "k3": "k3", "low_var_kl": "k3"}


def agg_loss(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    denominator: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) loss matrix to a scalar over the masked-in tokens (verl ``agg_loss``).

    - ``token-mean``: ``sum(loss * mask) / sum(mask)``; every token weighs the same (DAPO's token-level loss,
      arXiv 2503.14476; RAGEN's default).
    - ``seq-mean-token-mean``: mean over tokens within each sequence, then mean over sequences (ROLL's default;
      the GRPO paper's 1/|o| normalisation, arXiv 2402.03300).
    - ``seq-mean-token-sum``: sum over tokens within each sequence, then mean over sequences (Dr. GRPO without the
      constant, arXiv 2503.20783).

    Sequences with no masked-in token are left out of the sequence means (verl's old code counted them, giving NaN
    for ``seq-mean-token-mean``). An all-empty mask gives 0.

    Args:
        loss_mat: (B, T) per-token loss.
        mask: (B, T) bool or 0/1; positions that count.
        mode: one of :data:`AGG_MODES`.
        denominator: divide by this instead of the local count (tokens for ``token-mean``, non-empty sequences
            otherwise). With gradient accumulation pass the count over the whole mini-batch, so that the sum of the
            micro-batch losses equals the mini-batch loss.

    Returns:
        0-dim tensor.
    """
    if mask.shape != loss_mat.shape or loss_mat.dim() != 2:
        raise ValueError(f"loss_mat {tuple(loss_mat.shape)} and mask {tuple(mask.shape)} must both be (B, T)")
    m = mask.bool()
    masked = torch.where(m, loss_mat, torch.zeros_like(loss_mat))
    if mode == "token-mean":
        total, count = masked.sum(), m.sum()
    elif mode == "seq-mean-token-mean":
        total, count = (masked.sum(-1) / m.sum(-1).clamp(min=1)).sum(), m.any(-1).sum()
    elif mode == "seq-mean-token-sum":
        total, count = masked.sum(), m.any(-1).sum()
    else:
        raise ValueError(f"mode must be one of {AGG_MODES}, got {mode!r}")
    if denominator is None:
        denominator = count.clamp(min=1)
    return total / denominator


class PolicyLoss(NamedTuple):
    """Output of :func:`ppo_policy_loss`; all (B, T), unmasked (reduce with :func:`agg_loss` / ``masked_mean``)."""

    loss: torch.Tensor  # per-token policy loss
    ratio: torch.Tensor  # pi / pi_old
    clipped: torch.Tensor  # bool: the clipped surrogate was the active (larger) loss term ("pg_clipfrac")
    dual_clipped: torch.Tensor  # bool: the dual-clip bound was active, A < 0 only ("pg_clipfrac_lower")


def ppo_policy_loss(
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    clip_ratio_c: float | None = None,
) -> PolicyLoss:
    """PPO clipped surrogate loss with decoupled clip range and optional dual clip (verl ``compute_policy_loss``).

    With ``r = exp(logprob - old_logprob)`` (log-ratio clamped to [-20, 20] as verl) and advantage ``A``::

        L_clip = max(-A * r, -A * clamp(r, 1 - clip_low, 1 + clip_high))      # PPO, arXiv 1707.06347
        L      = min(L_clip, -A * clip_ratio_c)  if A < 0 and clip_ratio_c    # dual clip, arXiv 1912.09729
        L      = L_clip                          otherwise

    ``clip_high > clip_low`` is DAPO's clip-higher (arXiv 2503.14476; StarPO-S uses 0.2 / 0.28). The dual clip bounds
    the loss of a negative-advantage token whose ratio has exploded (RAGEN/verl ``clip_ratio_c = 3``; ROLL's
    ``dual_clip_loss`` uses ``1 + 2 * pg_clip`` instead, i.e. pass ``clip_ratio_c=1.4`` to match it).

    Args:
        logprob: (B, T) log-probs of the taken tokens under the current policy (carries the gradient).
        old_logprob: (B, T) log-probs under the behaviour policy (no gradient needed).
        advantages: (B, T).
        clip_low: lower clip epsilon, in [0, 1).
        clip_high: upper clip epsilon, >= 0.
        clip_ratio_c: dual-clip constant, > 1, or None for no dual clip.

    Returns:
        :class:`PolicyLoss` of (B, T) tensors.
    """
    if not 0 <= clip_low < 1:
        raise ValueError(f"clip_low must be in [0, 1), got {clip_low}")
    if clip_high < 0:
        raise ValueError(f"clip_high must be >= 0, got {clip_high}")
    if clip_ratio_c is not None and clip_ratio_c <= 1:
        raise ValueError(f"clip_ratio_c must be > 1 (or None), got {clip_ratio_c}")
    if not logprob.shape == old_logprob.shape == advantages.shape:
        raise ValueError(
            f"logprob {tuple(logprob.shape)}, old_logprob {tuple(old_logprob.shape)} and advantages "
            f"{tuple(advantages.shape)} must have the same shape"
        )
    ratio = torch.exp(torch.clamp(logprob - old_logprob, -20.0, 20.0))
    loss_unclipped = -advantages * ratio
    loss_clipped = -advantages * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    loss = torch.maximum(loss_unclipped, loss_clipped)
    clipped = loss_clipped > loss_unclipped
    if clip_ratio_c is None:
        dual_clipped = torch.zeros_like(clipped)
    else:
        bound = -advantages * clip_ratio_c
        negative = advantages < 0
        dual_clipped = negative & (loss > bound)
        loss = torch.where(negative, torch.minimum(loss, bound), loss)
    return PolicyLoss(loss=loss, ratio=ratio, clipped=clipped, dual_clipped=dual_clipped)


def behaviour_weights(
    prox_logprob: torch.Tensor, behav_logprob: torch.Tensor, cap: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Behaviour importance weights of AReaL's decoupled PPO objective (Fu et al., "AReaL: A Large-Scale
    Asynchronous Reinforcement Learning System for Language Reasoning", arXiv 2505.24298; AReaL's
    ``ppo_actor_loss_fn`` with ``use_decoupled_loss``, cap ``behav_imp_weight_cap``, 5.0 in its recipes)::

        J(theta) = E_{a ~ pi_behav} [ w * min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A) ]
        w = pi_prox(a) / pi_behav(a)        (no gradient)
        r = pi_theta(a) / pi_prox(a)        (the ratio PPO clips: :func:`ppo_policy_loss` with ``old = prox``)

    ``pi_behav`` is the stale policy that sampled the tokens, ``pi_prox`` the learner's weights before this
    iteration's update (the recomputed "old" log-probs). Splitting the ratio keeps the trust region around the
    recent policy while ``w`` corrects the sampling distribution. As in AReaL, a token whose weight exceeds ``cap``
    gets weight 0 (it stays in the loss's denominator). The per-token policy loss to aggregate is
    ``weight * ppo_policy_loss(logprob, prox_logprob, ...).loss``.

    Args:
        prox_logprob: (B, T) proximal-policy log-probs of the sampled tokens.
        behav_logprob: (B, T) behaviour-policy log-probs (what the sampler reported).
        cap: the largest weight kept (> 1), or None for no cap.

    Returns:
        ``(weight, kept)``: (B, T) float weights (0 where capped) and the (B, T) bool ``w <= cap``.
    """
    if prox_logprob.shape != behav_logprob.shape:
        raise ValueError(f"prox_logprob {tuple(prox_logprob.shape)} and behav_logprob "
                         f"{tuple(behav_logprob.shape)} differ in shape")
    weight = torch.exp(torch.clamp(prox_logprob - behav_logprob, -20.0, 20.0))
    kept = weight <= cap if cap is not None else torch.ones_like(weight, dtype=torch.bool)
    return torch.where(kept, weight, torch.zeros_like(weight)), kept


class ValueLoss(NamedTuple):
    """Output of :func:`value_loss`; both (B, T), unmasked."""

    loss: torch.Tensor  # per-token value loss, 0.5 * squared error
    clipped: torch.Tensor  # bool: the clipped prediction gave the larger error ("vf_clipfrac")


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, cliprange_value: float | None = None
) -> ValueLoss:
    """Clipped value loss (PPO2 / verl ``compute_value_loss``; discussed in Engstrom et al., arXiv 2005.12729).

    ``v_clip = old_values + clamp(values - old_values, -c, c)``;
    ``loss = 0.5 * max((values - returns)^2, (v_clip - returns)^2)``; with ``cliprange_value=None`` just
    ``0.5 * (values - returns)^2``.

    Args:
        values: (B, T) current critic predictions (carries the gradient).
        old_values: (B, T) predictions at rollout time.
        returns: (B, T) targets (e.g. from :func:`trainers.algos.advantages.gae_advantages`).
        cliprange_value: c > 0 (RAGEN: 0.5), or None for no clipping.

    Returns:
        :class:`ValueLoss` of (B, T) tensors.
    """
    if cliprange_value is not None and cliprange_value <= 0:
        raise ValueError(f"cliprange_value must be > 0 (or None), got {cliprange_value}")
    if not values.shape == old_values.shape == returns.shape:
        raise ValueError("values, old_values and returns must have the same shape")
    err = (values - returns) ** 2
    if cliprange_value is None:
        return ValueLoss(loss=0.5 * err, clipped=torch.zeros_like(err, dtype=torch.bool))
    v_clip = old_values + torch.clamp(values - old_values, -cliprange_value, cliprange_value)
    err_clip = (v_clip - returns) ** 2
    return ValueLoss(loss=0.5 * torch.maximum(err, err_clip), clipped=err_clip > err)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the categorical distribution ``softmax(logits)`` along the last dim, computed stably.

    ``H = -sum_v p_v log p_v`` with ``log p = log_softmax(logits)``; entries with ``p = 0`` (e.g. logits of
    ``-inf`` for masked vocabulary) contribute 0 and give finite gradients. Computed in the dtype of ``logits``;
    upcast bf16 logits first if precision matters.

    Args:
        logits: (B, T, V).

    Returns:
        (B, T).
    """
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    logp = torch.where(p > 0, logp, torch.zeros_like(logp))
    return -(p * logp).sum(-1)


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Log-probability of each token under ``softmax(logits)``: ``logits[token] - logsumexp(logits)``.

    Args:
        logits: (B, T, V); position t predicts ``tokens[:, t]`` (shift before calling for a causal LM).
        tokens: (B, T) integer token ids.

    Returns:
        (B, T).
    """
    if logits.shape[:-1] != tokens.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match tokens {tuple(tokens.shape)}")
    picked = torch.gather(logits, -1, tokens.long().unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def kl_penalty(logprob: torch.Tensor, ref_logprob: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Per-token estimate of KL(pi || pi_ref) from samples of pi (Schulman 2020, http://joschu.net/blog/kl-approx.html).

    With ``d = logprob - ref_logprob``:

    - ``k1`` (``kl``): ``d`` — unbiased, high variance, can be negative (RAGEN paper's vanilla StarPO).
    - ``k2`` (``mse``): ``0.5 * d^2`` — biased, low variance.
    - ``k3`` (``low_var_kl``): ``exp(-d) + d - 1`` — unbiased, >= 0; as verl, ``-d`` is clamped to [-20, 20] and
      the result to [-10, 10] (the GiGPO scripts' ``low_var_kl``).

    Args:
        logprob: (B, T) current policy log-probs of the sampled tokens.
        ref_logprob: (B, T) reference policy log-probs of the same tokens.
        estimator: a key of :data:`KL_ESTIMATORS`.

    Returns:
        (B, T), unmasked.
    """
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"estimator must be one of {sorted(KL_ESTIMATORS)}, got {estimator!r}")
    if logprob.shape != ref_logprob.shape:
        raise ValueError(f"logprob {tuple(logprob.shape)} and ref_logprob {tuple(ref_logprob.shape)} differ in shape")
    kind = KL_ESTIMATORS[estimator]
    d = logprob - ref_logprob
    if kind == "k1":
        return d
    if kind == "k2":
        return 0.5 * d**2
    neg_d = torch.clamp(-d, -20.0, 20.0)
    return torch.clamp(torch.exp(neg_d) - neg_d - 1, -10.0, 10.0)


def approx_kl(logprob: torch.Tensor, old_logprob: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Approximate KL(pi_old || pi) for logging how far an update moved the policy (CleanRL ``approx_kl``).

    The k3 estimator from samples of pi_old: ``mean((r - 1) - log r)`` with ``r = exp(logprob - old_logprob)``,
    averaged over masked-in tokens (log-ratio clamped to [-20, 20]). verl's ``ppo_kl`` is the k1 version,
    ``masked_mean(old_logprob - logprob, mask)``.

    Args:
        logprob: (B, T).
        old_logprob: (B, T).
        mask: (B, T).

    Returns:
        0-dim tensor (no gradient).
    """
    with torch.no_grad():
        log_r = torch.clamp(logprob - old_logprob, -20.0, 20.0)
        return masked_mean(torch.exp(log_r) - 1 - log_r, mask)


def adaptive_kl_coef(coef: float, current_kl: float, target_kl: float, n_steps: int, horizon: int) -> float:
    """The next KL-penalty coefficient of the adaptive controller (Ziegler et al., arXiv 1909.08593, §2.2; ROLL's
    ``target_kl`` / ``kl_horizon``): ``coef * (1 + clip(current / target - 1, -0.2, 0.2) * n_steps / horizon)``.

    A KL above the target raises the coefficient, below it lowers it, by at most 20% per ``horizon`` samples.
    """
    error = min(max(current_kl / target_kl - 1.0, -0.2), 0.2)
    return coef * (1.0 + error * n_steps / horizon)
