"""Training configuration: one typed dataclass whose field docstrings are the documentation.

Keys follow ROLL's agentic config (``roll/pipeline/agentic/agentic_config.py``) where ROLL has the setting, RAGEN's
where only RAGEN has it (``rollout_filter_ratio``), and Hugging Face ``TrainingArguments`` names for the optimiser
(``learning_rate``, ``weight_decay``, ``lr_scheduler_type``, ``warmup_steps``). A ROLL user's YAML reads naturally::

    preset: starpo_s
    pretrain: ~/.cache/agentgym-bench/models/warmstart
    rollout_batch_size: 128
    reward_normalization: {grouping: traj_group_id, method: identity}
    train_env_manager: {num_env_groups: 8, group_size: 16, tags: [AgentFrozenLake-v0]}

Precedence: dataclass defaults (= StarPO) < ``preset`` (:mod:`trainers.presets`) < the YAML file < ``key=value``
overrides. Unknown keys are an error that names the closest known key; ``__post_init__`` checks every cross-field
invariant and says how to fix a violation. Derived sizes are properties, never fields.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainers.advantages import NORM_METHODS
from trainers.losses import AGG_MODES, KL_ESTIMATORS

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
"""The bundled configs (``agentgym-bench train --list``)."""

ADV_ESTIMATORS = ("reinforce", "grpo", "gae", "gigpo")
GROUPINGS = ("traj_group_id", "tags", "batch")
BATCH_ADJUST_MODES = ("copy", "delete", "auto", "random_sample")
SCHEDULERS = ("constant", "linear", "cosine")

# Seed ranges: the rollout engine's conventions (agentgym_bench/rollout/engine.py, docs/trainers.md). Validation and
# benchmark evaluation use seeds 0 .. N-1 per env id; every training seed is >= TRAIN_SEED_START.
TRAIN_SEED_START = 10_000
VAL_SEED_START = 0


class ConfigError(ValueError):
    """A configuration that cannot run; the message says how to fix it."""


@dataclass
class RewardNormalization:
    """How episode scores become advantages (ROLL / RAGEN ``reward_normalization``)."""

    grouping: str = "traj_group_id"
    """Which episodes are normalised together: ``traj_group_id`` (the episodes of one env group, same seed; RAGEN's
    ``state``), ``tags`` (all episodes of one env id; RAGEN's ``inductive``) or ``batch`` (the whole batch)."""
    method: str = "mean_std"
    """``identity`` (raw score), ``mean`` (score - group mean) or ``mean_std`` ((score - mean) / (std + 1e-6))."""


@dataclass
class EnvManager:
    """The env groups of one rollout (ROLL ``train_env_manager`` / ``val_env_manager``).

    ``num_env_groups`` groups of ``group_size`` episodes; all episodes of a group share the env id and the reset
    seed (RAGEN's P prompts x N rollouts).
    """

    num_env_groups: int = 8
    """Env groups per rollout (RAGEN ``env_groups``; the paper's P)."""
    group_size: int = 16
    """Episodes per group, same env and seed (the paper's N). Validation uses 1."""
    tags: list[str] = field(default_factory=lambda: ["AgentFrozenLake-v0"])
    """Registered agent env ids (ROLL ``tags``)."""
    num_groups_partition: list[int] | None = None
    """Groups per tag, summing to ``num_env_groups`` (ROLL ``num_groups_partition``, RAGEN ``n_groups``);
    ``None`` splits evenly (the first tags get one more when it does not divide)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra ``gym.make`` keyword arguments for every tag, e.g. ``{prompt: compact}`` for the small default model."""
    history_length: int | None = None
    """Chat history the model sees: ``None`` is the whole conversation (RAGEN); ``k`` keeps the last ``k`` turns
    (ROLL ``history_length``; 0 = the current observation only). With a window an episode is no longer one token
    sequence, so training rows are turns (step-level samples) for every algorithm; StarPO's advantages stay
    trajectory-level."""


@dataclass
class TrainConfig:
    """Every setting of a StarPO / StarPO-S / GiGPO run. Defaults are vanilla StarPO (RAGEN paper, GRPO variant)."""

    # -- run -------------------------------------------------------------------------------------------------------
    preset: str | None = None
    """``starpo``, ``starpo_s`` or ``gigpo``: settings applied before the file's own (see trainers/presets.py)."""
    pretrain: str = "~/.cache/agentgym-bench/models/warmstart"
    """Model folder or hub id to start from (ROLL ``pretrain``); the critic starts from the same weights."""
    output_dir: str = "runs/train"
    """Run folder: ``metrics.jsonl``, ``curves.png``, ``config.yaml``, ``checkpoint-N/``."""
    seed: int = 0
    """Seeds the loop's generators: sampling, mini-batch shuffling, batch adjustment, critic head."""
    max_steps: int = 100
    """Rollout-update iterations (ROLL ``max_steps``)."""
    eval_steps: int = 10
    """Evaluate on the validation seeds every this many iterations, before the first and after the last."""
    save_steps: int = 50
    """Checkpoint every this many iterations and after the last (0: only after the last)."""
    save_total_limit: int = 2
    """Keep this many most recent checkpoints."""
    resume_from_checkpoint: str | None = None
    """A ``checkpoint-N`` folder, or ``auto`` for the latest one in ``output_dir`` (a fresh start if none)."""
    device: str = "auto"
    """``cpu``, ``cuda``, ``cuda:1`` ...; ``auto`` is ``cuda`` when available. Under torchrun each rank uses its own
    local GPU."""
    dtype: str = "float32"
    """Compute dtype: ``float32``, or ``bfloat16`` for mixed precision on GPU (autocast; parameters, gradients and
    optimiser states stay float32, as verl's FSDP mixed precision; the vLLM engine runs in bfloat16)."""
    progress: bool = True
    """Show a tqdm progress bar over iterations (rank 0)."""
    num_threads: int | None = None
    """torch intra-op threads per process (``None``: torch's default). On CPU cores shared with other work, 1 is
    often several times faster than 2 (threads spin-wait for each other)."""

    # -- rollout ---------------------------------------------------------------------------------------------------
    rollout_batch_size: int = 128
    """Episodes per iteration (ROLL); must equal ``train_env_manager.num_env_groups * group_size``."""
    val_batch_size: int = 64
    """Episodes per evaluation (ROLL); must equal ``val_env_manager.num_env_groups * group_size``."""
    train_env_manager: EnvManager = field(default_factory=EnvManager)
    """Training env groups."""
    val_env_manager: EnvManager = field(default_factory=lambda: EnvManager(num_env_groups=64, group_size=1))
    """Validation env groups (RAGEN: 256 groups of 1)."""
    train_seed_start: int = TRAIN_SEED_START
    """Seed of the first training group; group k of the run uses ``train_seed_start + k``."""
    val_seed_start: int = VAL_SEED_START
    """Seed of the first validation group; the same seeds every evaluation. Must not overlap training seeds."""
    max_new_tokens: int = 32
    """Token budget of one reply (ROLL ``generating_args.max_new_tokens``; RAGEN ``response_length``)."""
    temperature: float = 1.0
    """Sampling temperature during training rollouts (RAGEN 1.0)."""
    top_p: float = 1.0
    """Nucleus sampling threshold for training rollouts."""
    val_temperature: float = 1.0
    """Sampling temperature for evaluation (RAGEN 0.5; 0 is greedy)."""
    generation_batch_size: int | None = None
    """Conversations per generation call with the ``hf`` backend (``None``: all at once)."""
    enable_old_logprobs_recompute: bool = True
    """Score the sampled tokens with the actor before the update (verl; ROLL). ``false`` uses the log-probs the
    sampler reported (one forward pass less per iteration; needs ``top_p: 1`` and a backend that reports them, and the
    rows must hold exactly the sampled tokens: check ``rollout/logprob_diff`` on a recomputing run first)."""
    generation_backend: str = "hf"
    """``hf`` (transformers, CPU or GPU; the trained model itself generates) or ``vllm`` (GPU; a vLLM engine that
    receives the actor's weights after every update)."""
    vllm_gpu_memory_utilization: float = 0.5
    """GPU memory fraction the vLLM engine may take; the rest is the trainer's (RAGEN 0.5)."""

    # -- advantages ------------------------------------------------------------------------------------------------
    adv_estimator: str = "grpo"
    """``grpo`` / ``reinforce`` (group-normalised episode score, one value per trajectory; identical in ROLL's
    agentic pipeline), ``gae`` (critic + GAE over generated tokens, PPO) or ``gigpo`` (step-level samples)."""
    reward_normalization: RewardNormalization = field(default_factory=RewardNormalization)
    """Normalisation of episode scores (for ``gigpo``: of both levels)."""
    rollout_filter_ratio: float = 1.0
    """StarPO-S: keep this fraction of env groups, those with the largest in-group std of raw scores (RAGEN)."""
    rollout_filter_type: str = "std"
    """``std`` keeps the most varied groups, ``std_rev`` the least (RAGEN)."""
    gamma: float = 1.0
    """Token-level discount of GAE (ROLL ``gamma``; RAGEN 1.0)."""
    lambd: float = 1.0
    """GAE lambda (ROLL ``lambd``; RAGEN 1.0)."""
    step_reward_gamma: float = 0.95
    """GiGPO discount of step returns (ROLL; paper Eq. 5)."""
    episode_reward_weight: float = 1.0
    """GiGPO weight of the episode-level advantage (ROLL)."""
    step_reward_weight: float = 1.0
    """GiGPO weight of the step-level (anchor-state) advantage (ROLL; verl-agent ``step_advantage_w``)."""
    whiten_advantages: bool = False
    """Whiten the token advantages over the batch's generated tokens (ROLL; always done after GAE in RAGEN, so
    the ``starpo_s`` preset sets it)."""
    advantage_clip: float | None = None
    """Clamp advantages to [-c, c] after whitening (ROLL)."""
    batch_adjust_mode: str = "copy"
    """Batches of step rows vary in size; make the row count a multiple of ``ppo_mini_batch_size`` by ``copy``
    (duplicate random rows), ``delete`` (drop random rows), ``auto`` (delete if less than half a mini-batch would go,
    else copy) or ``random_sample`` (exactly one mini-batch) (ROLL). Applied after advantages."""

    # -- update ----------------------------------------------------------------------------------------------------
    ppo_epochs: int = 1
    """Passes over the batch per iteration (ROLL)."""
    ppo_mini_batch_size: int = 32
    """Rows (trajectories, or turns with step rows) per optimiser step, over all processes (RAGEN/verl)."""
    micro_batch_size: int = 8
    """Samples per forward/backward on one process (gradient accumulation; does not change the update)."""
    loss_agg_mode: str = "token-mean"
    """``token-mean`` (RAGEN), ``seq-mean-token-mean`` (ROLL default) or ``seq-mean-token-sum``."""
    pg_clip: float = 0.2
    """Symmetric PPO ratio clip (ROLL)."""
    use_pg_clip_range: bool = False
    """Use ``pg_clip_low`` / ``pg_clip_high`` instead of ``pg_clip`` (ROLL); clip-higher when high > low."""
    pg_clip_low: float = 0.2
    """Lower ratio clip with ``use_pg_clip_range`` (ROLL; RAGEN ``clip_ratio_low``)."""
    pg_clip_high: float = 0.28
    """Upper ratio clip with ``use_pg_clip_range`` (ROLL; RAGEN ``clip_ratio_high`` 0.28)."""
    dual_clip_loss: bool = False
    """Bound the loss of negative-advantage tokens at ``(1 + 2 pg_clip) |A|`` (ROLL's dual clip)."""
    value_clip: float | None = 0.5
    """Clip range of the value loss (ROLL ``value_clip``; RAGEN ``cliprange_value`` 0.5)."""
    entropy_loss_coef: float = 0.001
    """Entropy bonus coefficient (ROLL; RAGEN ``entropy_coeff`` 0.001)."""
    init_kl_coef: float = 0.001
    """Fixed KL coefficient of a per-token penalty ``-coef * KL(pi || pi_ref)`` added to the rewards (ROLL's
    ``init_kl_coef`` with ``add_token_level_kl``; RAGEN's vanilla StarPO: 0.001, k1). 0 disables it."""
    use_kl_loss: bool = False
    """Add ``kl_loss_coef * KL(pi || pi_ref)`` to the actor loss instead (ROLL; the GiGPO recipes)."""
    kl_loss_coef: float = 0.0
    """Coefficient of the KL loss (ROLL; GiGPO recipes 0.01)."""
    kl_penalty: str = "k1"
    """KL estimator for both uses: ``k1``/``kl``, ``k2``/``mse``, ``k3``/``low_var_kl`` (ROLL / verl)."""
    max_grad_norm: float = 1.0
    """Gradient clipping of actor and critic (ROLL; RAGEN ``grad_clip``)."""
    learning_rate: float = 1e-4
    """Actor learning rate, AdamW (RAGEN: 1e-6 for Qwen2.5-0.5B; the small default model needs ~1e-4)."""
    critic_learning_rate: float = 1e-3
    """Critic learning rate (RAGEN: 10x the actor's)."""
    weight_decay: float = 0.01
    """AdamW weight decay (RAGEN 0.01)."""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    lr_scheduler_type: str = "constant"
    """``constant`` (RAGEN), ``linear`` or ``cosine`` decay to 0 at ``max_steps``; stepped once per iteration."""
    warmup_steps: int = 0
    """Linear warm-up over this many iterations."""

    def __post_init__(self) -> None:
        if isinstance(self.reward_normalization, Mapping):
            self.reward_normalization = _build(RewardNormalization, self.reward_normalization, "reward_normalization.")
        for name in ("train_env_manager", "val_env_manager"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                setattr(self, name, _build(EnvManager, value, name + "."))
        self.adam_betas = tuple(self.adam_betas)
        self._check()

    # -- derived ---------------------------------------------------------------------------------------------------

    @property
    def step_level(self) -> bool:
        """The advantage is per env step (GiGPO) rather than per trajectory."""
        return self.adv_estimator == "gigpo"

    @property
    def step_rows(self) -> bool:
        """Training rows are turns (GiGPO, or any algorithm with a history window) rather than whole episodes."""
        return self.step_level or self.train_env_manager.history_length is not None

    @property
    def uses_critic(self) -> bool:
        return self.adv_estimator == "gae"

    @property
    def uses_reference(self) -> bool:
        """A frozen copy of the initial policy is needed for a KL term."""
        return self.init_kl_coef > 0 or (self.use_kl_loss and self.kl_loss_coef > 0)

    @property
    def clip_low(self) -> float:
        return self.pg_clip_low if self.use_pg_clip_range else self.pg_clip

    @property
    def clip_high(self) -> float:
        return self.pg_clip_high if self.use_pg_clip_range else self.pg_clip

    @property
    def groups_kept(self) -> int:
        """Env groups left after the StarPO-S filter (``max(1, floor(ratio * groups))``)."""
        groups = self.train_env_manager.num_env_groups
        return groups if self.rollout_filter_ratio >= 1 else int(self.rollout_filter_ratio * groups + 1e-9)

    @property
    def train_seed_range(self) -> range:
        """Every seed a training episode can use in this run."""
        groups = self.max_steps * self.train_env_manager.num_env_groups
        return range(self.train_seed_start, self.train_seed_start + groups)

    @property
    def val_seed_range(self) -> range:
        """The validation seeds."""
        return range(self.val_seed_start, self.val_seed_start + self.val_env_manager.num_env_groups)

    # -- checks ----------------------------------------------------------------------------------------------------

    def _check(self) -> None:
        _check_types(self, "")
        _check_types(self.reward_normalization, "reward_normalization.")
        _check_types(self.train_env_manager, "train_env_manager.")
        _check_types(self.val_env_manager, "val_env_manager.")
        _choice("adv_estimator", self.adv_estimator, ADV_ESTIMATORS)
        _choice("reward_normalization.grouping", self.reward_normalization.grouping, GROUPINGS)
        _choice("reward_normalization.method", self.reward_normalization.method, NORM_METHODS)
        _choice("rollout_filter_type", self.rollout_filter_type, ("std", "std_rev"))
        _choice("batch_adjust_mode", self.batch_adjust_mode, BATCH_ADJUST_MODES)
        _choice("loss_agg_mode", self.loss_agg_mode, AGG_MODES)
        _choice("kl_penalty", self.kl_penalty, tuple(KL_ESTIMATORS))
        _choice("lr_scheduler_type", self.lr_scheduler_type, SCHEDULERS)
        _choice("dtype", self.dtype, ("float32", "bfloat16"))
        _choice("generation_backend", self.generation_backend, ("hf", "vllm"))
        for name in ("max_steps", "ppo_epochs", "ppo_mini_batch_size", "micro_batch_size", "rollout_batch_size",
                     "val_batch_size", "max_new_tokens", "eval_steps", "save_total_limit"):
            _positive_int(name, getattr(self, name))
        for name in ("save_steps", "warmup_steps", "train_seed_start", "val_seed_start"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be an integer >= 0")
        for prefix in ("train_env_manager", "val_env_manager"):
            self._check_env_manager(prefix)
        self._check_sizes()
        self._check_ranges()
        if self.reward_normalization.method == "identity" and self.adv_estimator == "gigpo":
            raise ConfigError("adv_estimator=gigpo needs reward_normalization.method mean or mean_std: identity would "
                              "add raw step returns to the advantage (ROLL's silent pitfall)")
        train, val = self.train_seed_range, self.val_seed_range
        if train.start < val.stop and val.start < train.stop:
            raise ConfigError(
                f"training seeds {_fmt_range(train)} and validation seeds {_fmt_range(val)} overlap (e.g. seed "
                f"{max(train.start, val.start)}); keep train_seed_start >= "
                f"{TRAIN_SEED_START} and val_seed_start + val_env_manager.num_env_groups <= {TRAIN_SEED_START}")

    def _check_env_manager(self, prefix: str) -> None:
        manager: EnvManager = getattr(self, prefix)
        _positive_int(f"{prefix}.num_env_groups", manager.num_env_groups)
        _positive_int(f"{prefix}.group_size", manager.group_size)
        if not manager.tags or not all(isinstance(t, str) for t in manager.tags):
            raise ConfigError(f"{prefix}.tags={manager.tags!r} must be a non-empty list of env ids, e.g. "
                              "[AgentFrozenLake-v0]")
        partition = manager.num_groups_partition
        if partition is not None:
            if len(partition) != len(manager.tags) or sum(partition) != manager.num_env_groups:
                raise ConfigError(f"{prefix}.num_groups_partition={partition} must give one count per tag "
                                  f"({len(manager.tags)} tags) summing to num_env_groups={manager.num_env_groups}")
            if any(not isinstance(n, int) or n < 1 for n in partition):
                raise ConfigError(f"{prefix}.num_groups_partition={partition} must hold integers >= 1 (drop a tag "
                                  "instead of giving it 0 groups)")
        if manager.history_length is not None and (not isinstance(manager.history_length, int)
                                                   or manager.history_length < 0):
            raise ConfigError(f"{prefix}.history_length={manager.history_length!r} must be null or an integer >= 0")

    def _check_sizes(self) -> None:
        train, val = self.train_env_manager, self.val_env_manager
        if self.rollout_batch_size % train.group_size:
            raise ConfigError(f"rollout_batch_size={self.rollout_batch_size} is not a multiple of "
                              f"train_env_manager.group_size={train.group_size}; make it a multiple, e.g. "
                              f"{max(1, self.rollout_batch_size // train.group_size) * train.group_size}")
        if self.rollout_batch_size != train.num_env_groups * train.group_size:
            raise ConfigError(f"rollout_batch_size={self.rollout_batch_size} must equal train_env_manager."
                              f"num_env_groups * group_size = {train.num_env_groups} * {train.group_size}; set "
                              f"train_env_manager.num_env_groups={self.rollout_batch_size // train.group_size}")
        if self.val_batch_size != val.num_env_groups * val.group_size:
            raise ConfigError(f"val_batch_size={self.val_batch_size} must equal val_env_manager.num_env_groups * "
                              f"group_size = {val.num_env_groups} * {val.group_size}")
        if not 0 < self.rollout_filter_ratio <= 1:
            raise ConfigError(f"rollout_filter_ratio={self.rollout_filter_ratio} must be in (0, 1] (1 = no filter)")
        if self.groups_kept < 1:
            raise ConfigError(f"rollout_filter_ratio={self.rollout_filter_ratio} keeps no group out of "
                              f"{train.num_env_groups}: raise it to at least {1 / train.num_env_groups:.4g} or use "
                              "more env groups")
        if self.rollout_filter_ratio < 1 and train.group_size < 2:
            raise ConfigError("rollout_filter_ratio < 1 ranks groups by in-group reward std, which needs "
                              f"train_env_manager.group_size >= 2 (it is {train.group_size})")
        if not self.step_rows:
            kept = self.groups_kept * train.group_size
            if kept % self.ppo_mini_batch_size:
                raise ConfigError(
                    f"each iteration trains on {kept} trajectories ({self.groups_kept} groups x {train.group_size}"
                    f"{' after the filter' if self.rollout_filter_ratio < 1 else ''}), not a multiple of "
                    f"ppo_mini_batch_size={self.ppo_mini_batch_size}; set ppo_mini_batch_size to a divisor of {kept}")
        if self.ppo_mini_batch_size % self.micro_batch_size:
            raise ConfigError(f"ppo_mini_batch_size={self.ppo_mini_batch_size} must be a multiple of "
                              f"micro_batch_size={self.micro_batch_size}")

    def _check_ranges(self) -> None:
        for name, low, high in [("temperature", 0, None), ("val_temperature", 0, None), ("gamma", 0, 1),
                                ("lambd", 0, 1), ("step_reward_gamma", 0, 1), ("entropy_loss_coef", 0, None),
                                ("init_kl_coef", 0, None), ("kl_loss_coef", 0, None), ("weight_decay", 0, None)]:
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                raise ConfigError(f"{name}={value} must be in [{low}, {high if high is not None else 'inf'})")
        if not self.enable_old_logprobs_recompute and self.top_p < 1:
            raise ConfigError("enable_old_logprobs_recompute=false uses the sampler's log-probs, which with top_p < 1 "
                              "are of the truncated distribution, not the policy's; set top_p=1 or recompute")
        if self.temperature == 0:
            raise ConfigError("temperature=0 (greedy) gives no exploration and no valid log-probs to train on; use "
                              "temperature > 0 for training rollouts (val_temperature may be 0)")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p={self.top_p} must be in (0, 1]")
        for name in ("learning_rate", "critic_learning_rate", "max_grad_norm"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be > 0")
        if not 0 <= self.clip_low < 1 or self.clip_high < 0:
            raise ConfigError(f"ratio clip low={self.clip_low} must be in [0, 1) and high={self.clip_high} >= 0")
        for name in ("advantage_clip", "value_clip"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name}={value} must be > 0, or null to disable")
        if self.use_kl_loss and self.init_kl_coef > 0:
            raise ConfigError("both use_kl_loss and init_kl_coef > 0 are set: pick one place for the KL term "
                              "(init_kl_coef=0 for a KL loss, or use_kl_loss=false for a KL reward penalty)")
        for name in ("generation_batch_size", "num_threads"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))

    # -- I/O -------------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (tuples as lists), loadable again with :func:`config_from_dict`."""
        data = dataclasses.asdict(self)
        data["adam_betas"] = list(self.adam_betas)
        return data

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))


def _choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(str, allowed))}")


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name}={value!r} must be a positive integer")


_TYPE_CHECKS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "list[int]": lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
    "dict[str, Any]": lambda v: isinstance(v, dict),
    "tuple[float, float]": lambda v: isinstance(v, tuple) and len(v) == 2
    and all(isinstance(x, int | float) for x in v),
}


def _check_types(obj: Any, prefix: str) -> None:
    """Each field's value against its annotation (``X | None`` allows None; an int is a float)."""
    for f in dataclasses.fields(obj):
        annotation = str(f.type)
        if annotation in ("RewardNormalization", "EnvManager"):
            continue
        value = getattr(obj, f.name)
        optional = annotation.endswith(" | None")
        base = annotation.removesuffix(" | None")
        if value is None and optional:
            continue
        if not _TYPE_CHECKS[base](value):
            raise ConfigError(f"{prefix}{f.name}={value!r} must be {annotation.replace('None', 'null')}")


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads ``1e-4`` as a string; this loader reads it as a float, as a user means it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+"
               r"(?:[eE][-+]?[0-9]+)?|\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN)$"),
    list("-+0123456789."),
)


def _yaml_load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _fmt_range(r: range) -> str:
    return f"[{r.start}, {r.stop})"


def _known_keys(cls: type, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(cls):
        keys.append(prefix + f.name)
        if f.name in ("reward_normalization",):
            keys += _known_keys(RewardNormalization, f"{f.name}.")
        if f.name in ("train_env_manager", "val_env_manager"):
            keys += _known_keys(EnvManager, f"{f.name}.")
    return keys


def _unknown_key(key: str) -> ConfigError:
    # a ROLL user writing group_size at top level means train_env_manager.group_size
    close = [k for k in _known_keys(TrainConfig) if k.endswith("." + key)][:1]
    close = close or difflib.get_close_matches(key, _known_keys(TrainConfig), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]}?" if close else "; see docs/trainers.md for the keys"
    return ConfigError(f"unknown config key {key!r}{hint}")


def _build(cls: type, data: Mapping[str, Any], prefix: str = "") -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            raise _unknown_key(prefix + key)
    return cls(**data)


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise _unknown_key(key)
        node = child
    node[parts[-1]] = value


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def parse_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """``["key=value", "a.b=value"]`` to a nested dict; values are parsed as YAML (``1e-4``, ``true``, ``[a, b]``).

    Raises:
        ConfigError: an item without ``=``.
    """
    data: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like key=value (e.g. learning_rate=1e-4 or "
                              "train_env_manager.group_size=8)")
        _set_dotted(data, key.strip(), _yaml_load(raw) if raw.strip() else None)
    return data


def config_from_dict(data: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any] = ()) -> TrainConfig:
    """Defaults < ``preset`` < ``data`` < ``overrides`` (``key=value`` strings or a nested dict)."""
    from trainers.presets import PRESETS

    extra = parse_overrides(overrides) if not isinstance(overrides, Mapping) else dict(overrides)
    merged = _merge(dict(data), extra)
    preset = merged.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise ConfigError(f"preset={preset!r} is not one of {', '.join(PRESETS)}")
        merged = _merge(PRESETS[preset], merged)
    for key in merged:
        if key not in {f.name for f in dataclasses.fields(TrainConfig)}:
            raise _unknown_key(key)
    if "adam_betas" in merged:
        merged["adam_betas"] = tuple(merged["adam_betas"])
    return TrainConfig(**merged)


def load_config(path: str | os.PathLike, overrides: Sequence[str] | Mapping[str, Any] = ()) -> TrainConfig:
    """Read a YAML config file, then apply ``overrides``."""
    text = Path(path).read_text()
    data = _yaml_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of config keys, not {type(data).__name__}")
    return config_from_dict(data, overrides)
