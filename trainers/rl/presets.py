"""The algorithms as config overrides on :class:`trainers.rl.config.TrainConfig` (whose defaults are StarPO).

StarPO-S differs from StarPO by settings only, so it is a preset, not a copy (style.md §8.5); GiGPO changes the
samples (one row per env step) and the advantage, which the loop selects from ``adv_estimator``.

- ``STARPO``: vanilla StarPO as in RAGEN's paper (arXiv 2504.20073, App. B.2) in its GRPO form: group-normalised
  episode scores, symmetric clip 0.2, KL penalty 0.001 (k1) in the reward, no filter, no critic.
- ``STARPO_S``: StarPO plus the paper's four changes (RAGEN ``config/base.yaml``): keep the 25% of env groups with the
  largest reward std, a critic (PPO with GAE, gamma = lambda = 1, whitened advantages), no KL, clip-higher 0.2/0.28.
- ``STARPO_S_GRPO``: StarPO-S without its critic, for comparing the filter with the critic held equal: StarPO's
  GRPO advantages (group-normalised episode scores) plus StarPO-S's other three changes (the 25% top-std filter, no
  KL, clip-higher 0.2/0.28). Ours, not RAGEN's: RAGEN's StarPO-S always has the critic, so against ``starpo`` it
  changes the critic and the filter at once (docs/lab/2026-11-23-echo-trap.md).
- ``STARPO_SNR``: StarPO with signal-aware sampling (``dynamic_sampling``, :mod:`trainers.rl.dynamic_sampling`): each
  iteration plays twice the env groups it trains on and keeps those with the largest in-group reward std (RAGEN-2's
  SNR-aware filter, arXiv 2604.06268), never a zero-variance group while an informative one is left; a pool short
  of informative groups is refilled with fresh groups up to twice (DAPO's dynamic sampling, arXiv 2503.14476).
  Everything else is StarPO's, so against ``starpo`` it changes only which groups are trained on. Ours, not RAGEN's:
  the oversampling factor and refill bound are untuned (at most 6x StarPO's rollouts an iteration).
- ``GIGPO``: Group-in-Group Policy Optimization (arXiv 2505.10978) as in ROLL's FrozenLake GiGPO recipe
  (``examples/qwen2.5-0.5B-agentic/agent_val_frozen_lake_gigpo.yaml``): step-level samples,
  ``reward_normalization.method: mean``, step returns discounted by 0.95, weights 1/1, advantage clip 20, no
  whitening, KL loss 0.01 (k3, ROLL's fixed estimator), no entropy bonus, ``loss_agg_mode: seq-mean-token-mean``
  (ROLL's default), ``batch_adjust_mode: copy``.

Each preset lists every setting that defines it, even where it equals the default, so a preset reads as the
algorithm's definition; ``STARPO_S`` is ``STARPO_S_GRPO`` (StarPO + the filter, clip-higher, no KL) plus the critic.
"""

from __future__ import annotations

from typing import Any

STARPO: dict[str, Any] = {
    "adv_estimator": "grpo",
    "reward_normalization": {"grouping": "traj_group_id", "method": "mean_std"},
    "rollout_filter_ratio": 1.0,
    "use_pg_clip_range": False,
    "pg_clip": 0.2,
    "add_token_level_kl": True,
    "init_kl_coef": 0.001,
    "kl_penalty": "k1",
    "use_kl_loss": False,
    "whiten_advantages": False,
    "entropy_loss_coef": 0.001,
    "loss_agg_mode": "token-mean",
}

STARPO_S_GRPO: dict[str, Any] = {
    **STARPO,
    "rollout_filter_ratio": 0.25,
    "rollout_filter_type": "std",
    "use_pg_clip_range": True,
    "pg_clip_low": 0.2,
    "pg_clip_high": 0.28,
    "add_token_level_kl": False,
    "init_kl_coef": 0.0,
}

STARPO_S: dict[str, Any] = {
    **STARPO_S_GRPO,
    "adv_estimator": "gae",
    "gamma": 1.0,
    "lambd": 1.0,
    "reward_normalization": {"grouping": "traj_group_id", "method": "identity"},
    "whiten_advantages": True,
}

STARPO_SNR: dict[str, Any] = {
    **STARPO,
    "dynamic_sampling": {"oversample": 2, "select": "top_std", "max_refill_rounds": 2},
}

GIGPO: dict[str, Any] = {
    "adv_estimator": "gigpo",
    "reward_normalization": {"grouping": "traj_group_id", "method": "mean"},
    "step_reward_gamma": 0.95,
    "episode_reward_weight": 1.0,
    "step_reward_weight": 1.0,
    "advantage_clip": 20.0,
    "whiten_advantages": False,
    "batch_adjust_mode": "copy",
    "rollout_filter_ratio": 1.0,
    "use_pg_clip_range": False,
    "pg_clip": 0.2,
    "add_token_level_kl": False,
    "init_kl_coef": 0.0,
    "use_kl_loss": True,
    "kl_loss_coef": 0.01,
    "kl_loss_type": "k3",
    "entropy_loss_coef": 0.0,
    "loss_agg_mode": "seq-mean-token-mean",
}

PRESETS: dict[str, dict[str, Any]] = {"starpo": STARPO, "starpo_s": STARPO_S, "starpo_s_grpo": STARPO_S_GRPO,
                                      "gigpo": GIGPO, "starpo_snr": STARPO_SNR}
