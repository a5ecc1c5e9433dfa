"""Training configuration: one typed dataclass whose field docstrings are the documentation.

Keys follow ROLL's agentic config (github.com/alibaba/ROLL, ``roll/pipeline/agentic/agentic_config.py``) where ROLL has
the setting, RAGEN's where only RAGEN has it (``rollout_filter_ratio``), and Hugging Face ``TrainingArguments`` names
for the optimiser (``learning_rate``, ``weight_decay``, ``lr_scheduler_type``, ``warmup_steps``). A ROLL user's YAML
reads naturally::

    preset: starpo_s
    pretrain: warmstart
    rollout_batch_size: 128
    reward_normalization: {grouping: traj_group_id, method: identity}
    train_env_manager: {num_env_groups: 8, group_size: 16, tags: [AgentFrozenLake-v0]}

ROLL's documented example configs load unchanged (``tests/trainers/test_roll_configs.py``): ROLL's tag names
(``FrozenLake``, ``SimpleSokoban`` ...) are read as our env ids (:data:`ROLL_TAGS`), and ROLL's infrastructure keys
that mean nothing here (:data:`IGNORED_KEYS`: worker placement, trackers, env manager classes) are dropped with a
one-line notice on stderr, never silently.

Loaded by the one loader of both trainers (:mod:`trainers.runtime.config_loading`). Precedence: dataclass defaults (=
StarPO without its reward KL, which ``add_token_level_kl`` turns on) < ``preset`` (:mod:`trainers.rl.presets`) < the
YAML file < ``key=value`` overrides. Unknown keys are an error that names the closest known key; ``__post_init__``
checks every cross-field invariant and says how to fix a violation. Derived sizes are properties, never fields. Every
error is a :class:`~trainers.runtime.config_loading.ConfigError` (a :class:`~agentgym_bench.errors.UserError`: the
command line prints it as one line).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import agentgym_bench  # noqa: F401 - registers the env ids
from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.bargain import BARGAIN_IDS
from agentgym_bench.multiagent.selfplay import MULTIAGENT_ENVS
from agentgym_bench.registration import OWN_ENV_HINT, registered
from agentgym_bench.seeds import TEST_SEEDS, TRAIN_SEED_START, VALIDATION_SEED_START, check_seeds_disjoint
from trainers.algos.advantages import NORM_METHODS
from trainers.algos.losses import AGG_MODES, KL_ESTIMATORS
from trainers.rl.dynamic_sampling import SELECTION_RULES
from trainers.rl.matches import FIXED_OPPONENTS, OPPONENTS
from trainers.rl.presets import PRESETS
from trainers.runtime import config_loading
from trainers.runtime.config_loading import ConfigError, check_types, choice, merge, nest, notice, positive_int
from trainers.runtime.metrics import EchoTrapRule
from trainers.runtime.schedule import SCHEDULERS

ADV_ESTIMATORS = ("reinforce", "grpo", "gae", "gigpo")
GROUPINGS = ("traj_group_id", "tags", "batch")
BATCH_ADJUST_MODES = ("copy", "delete", "auto", "random_sample")

ROLL_TAGS = {
    "FrozenLake": "AgentFrozenLake-v0",
    "SimpleSokoban": "AgentSokoban-v0",
    "LargerSokoban": "AgentSokobanLarge-v0",
    "SokobanDifferentGridVocab": "AgentSokobanAltVocab-v0",
    "Bandit": "AgentBandit-v0",
    "BanditTest": "AgentBanditTest-v0",
    "WebShop": "AgentWebShop-v0",
}
"""ROLL's / RAGEN's env tags and the env ids that implement them here (docs/envs.md)."""

IGNORED_KEYS = {
    "": ("env_manager_cls", "num_gpus_per_node", "exp_name", "logging_dir", "logging_steps", "track_with",
         "tracker_kwargs", "system_envs", "render_save_dir", "checkpoint_config"),
    "env_manager": ("max_env_num_per_worker",),
}
"""ROLL keys with no meaning here (placement, trackers, env manager classes: rows follow ``adv_estimator`` and
``history_length``), accepted with a notice. Top level (``""``) and inside ``train_env_manager`` /
``val_env_manager``."""


VAL_BATCH_SIZE = 64
"""Default validation episodes: 64 seeds, one episode each."""


@dataclass
class RewardNormalization:
    """How episode scores become advantages (ROLL / RAGEN ``reward_normalization``)."""

    grouping: str = "traj_group_id"
    """Which episodes are normalised together: ``traj_group_id`` (the episodes of one env group, same seed; RAGEN's
    ``state``), ``tags`` (all episodes of one env id; RAGEN's ``inductive``) or ``batch`` (the whole batch)."""
    method: str = "mean_std"
    """``identity`` (raw score), ``mean`` (score - group mean) or ``mean_std`` ((score - mean) / (std + 1e-6));
    ROLL's ``asym_clip`` is read as ``mean_std`` (what ROLL computes for it)."""
    norm_mean_type: str | None = None
    """ROLL's explicit form, which takes priority over ``method``: ``group`` (the ``grouping`` groups) or ``batch``.
    Null (the default) leaves ``method`` in charge, so raw scores are ``method: identity``, not nulls here.
    Resolved into ``method`` / ``grouping`` when read."""
    norm_std_type: str | None = None
    """ROLL's explicit form: ``group``, ``batch`` or null (no division by the std, where ``norm_mean_type`` is set).
    Must use the same scope as ``norm_mean_type`` (the mixed forms are not implemented)."""

    def __post_init__(self) -> None:
        if self.method == "asym_clip":
            self.method = "mean_std"
        mean, std = self.norm_mean_type, self.norm_std_type
        if mean is None and std is None:
            return
        for name, value in (("norm_mean_type", mean), ("norm_std_type", std)):
            if value not in (None, "group", "batch"):
                raise ConfigError(f"reward_normalization.{name}={value!r} is not one of group, batch, null")
        if mean is None or (std is not None and std != mean):
            raise ConfigError(f"reward_normalization.norm_mean_type={mean!r} with norm_std_type={std!r} is not "
                              "supported: use the same scope for both, or only norm_mean_type")
        self.method = "mean" if std is None else "mean_std"
        if mean == "batch":
            self.grouping = "batch"
        self.norm_mean_type = self.norm_std_type = None


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
    """Registered agent env ids (ROLL ``tags``; ROLL's own tag names such as ``FrozenLake`` are read as our ids,
    :data:`ROLL_TAGS`). ``val_env_manager`` takes the training tags, ``env_kwargs``, ``history_length``,
    ``opponent`` and ``learner_seats`` unless it sets its own. With an ``opponent``: one two-player env id."""
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

    # -- two-player envs (trainers/rl/matches.py): these three keys and TrainConfig._check_match_manager go together
    opponent: str | None = None
    """Makes the manager's episodes two-player matches (``trainers.rl.matches.MatchGroups``) against ``random`` /
    ``scripted`` (Bargain's fixed policies), ``self`` (the learner on both seats) or ``snapshot`` (a frozen copy of
    the learner, refreshed every ``snapshot_every`` rollouts). ``tags`` then holds one two-player env id
    (``Bargain-v0``, ``TextArena/<id>``) and only the learner seat's turns are trained on; ``success`` is a win and
    the score the learner's payoff, and the metrics add the win/draw/loss rates. Validation needs a fixed opponent
    (``random`` or ``scripted``). ``null``: single-agent envs."""
    learner_seats: str = "alternate"
    """With an ``opponent``: ``alternate`` (the learner on ``player_0`` in even groups, ``player_1`` in odd ones) or
    one agent name for every match."""
    snapshot_every: int = 10
    """With ``opponent: snapshot``: rollouts between copies of the learner's weights into the opponent."""


@dataclass
class AsyncRollout:
    """Asynchronous rollouts with bounded staleness (issue 52; docs/trainers.md, "Asynchronous rollouts").

    With ``max_staleness >= 1`` a rollout worker process generates the next batches with the latest weights it has
    while the learner updates (:mod:`trainers.rl.async_rollout`), and the update corrects for the lag with AReaL's
    decoupled PPO objective (:func:`trainers.algos.losses.behaviour_weights`)."""

    max_staleness: int = 0
    """Policy versions a training batch may lag behind the learner (AReaL ``max_head_offpolicyness``): batch ``k``
    is generated only once the weights after iteration ``k - 1 - max_staleness`` exist. 0: the synchronous loop,
    exactly (same code path, same metrics)."""
    behaviour_weight_cap: float | None = 5.0
    """Tokens whose behaviour importance weight ``pi_prox / pi_behav`` exceeds this get weight 0 (AReaL
    ``behav_imp_weight_cap``, default 5 in its async recipes); ``null``: no cap."""


@dataclass
class DynamicSampling:
    """Signal-aware sampling (docs/trainers.md, "Signal-aware sampling"; the selection is
    :mod:`trainers.rl.dynamic_sampling`): play a pool of ``oversample * num_env_groups`` env groups, train on the
    ``num_env_groups`` that carry the most signal (RAGEN-2's SNR-aware filter, arXiv 2604.06268), never a
    zero-variance group while informative ones are left, and refill the pool when it has too few (DAPO's dynamic
    sampling, arXiv 2503.14476). Off by default (``oversample: 1``, ``max_refill_rounds: 0``)."""

    oversample: int = 1
    """Groups played per round, as a multiple of ``train_env_manager.num_env_groups`` (each tag's share scaled
    alike); ``num_env_groups`` of them are trained on (verl's DAPO: ``gen_batch_size / train_batch_size``)."""
    select: str = "top_std"
    """Which groups of the pool are kept: ``top_std``, the informative ones with the largest in-group std of the
    training score (RAGEN-2), or ``first_nonzero``, the first informative ones in the order played (DAPO). Both
    keep a zero-variance group only for places no informative group is left to fill."""
    max_refill_rounds: int = 0
    """While the pool holds fewer than ``num_env_groups`` informative groups, play another round of the pool (new
    seeds), at most this many times (DAPO keeps sampling; verl's ``max_num_gen_batches`` is this + 1). Still short
    after the last one: the remaining places go to zero-variance groups, in the order played
    (``rollout/uninformative_kept``)."""

    @property
    def enabled(self) -> bool:
        return self.oversample > 1 or self.max_refill_rounds > 0


@dataclass
class TrainConfig:
    """Every setting of a StarPO / StarPO-S / GiGPO run. Defaults are vanilla StarPO (RAGEN paper, GRPO variant)."""

    # -- run -------------------------------------------------------------------------------------------------------
    preset: str | None = None
    """``starpo``, ``starpo_s``, ``starpo_s_grpo`` (StarPO-S without the critic), ``gigpo`` or ``starpo_snr`` (StarPO
    with signal-aware sampling): settings applied before the file's own (see trainers/rl/presets.py)."""
    pretrain: str = "warmstart"
    """Model folder, a name under ``$AGENTGYM_BENCH_HOME/models`` (the default: the warm start that
    ``agentgym-bench warmstart`` writes there) or a hub id to start from (ROLL ``pretrain``;
    :func:`agentgym_bench.paths.resolve_model`); the critic starts from the same weights."""
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
    """Compute dtype: ``float32``; ``bfloat16`` for mixed precision (autocast on the run's device, GPU or CPU;
    parameters, gradients and optimiser states stay float32, as verl's FSDP mixed precision; the vLLM engine runs in
    bfloat16); or ``auto``: chosen by measurement at the start (``bfloat16`` on a GPU that supports it; on a CPU
    whichever a short forward + backward probe shows faster), recorded in the run folder's ``compute_dtype.json`` and
    kept when the run resumes (:mod:`trainers.runtime.compute_dtype`). The reference recipes keep ``float32``: on the
    reference machine bfloat16 was no faster (benchmarks/iteration_split.md)."""
    progress: bool = True
    """Show a tqdm progress bar over iterations (rank 0)."""
    num_threads: int | None = None
    """torch intra-op threads per process (``None``: torch's default). On CPU cores shared with other work, 1 is
    often several times faster than 2 (threads spin-wait for each other)."""

    # -- rollout ---------------------------------------------------------------------------------------------------
    rollout_batch_size: int = 128
    """Episodes per iteration (ROLL); must equal ``train_env_manager.num_env_groups * group_size``."""
    val_batch_size: int = VAL_BATCH_SIZE
    """Episodes per evaluation (ROLL). ``val_env_manager.num_env_groups`` follows it when not set (and the other way
    round); when both are set they must agree."""
    sequence_length: int | None = None
    """Cap on the tokens of one model call, prompt + reply (ROLL). Before each turn an episode whose prompt plus
    ``max_new_tokens`` would exceed it ends there (truncated), so no training row is longer; ROLL instead shortens
    the last reply. ``null``: the model's ``max_position_embeddings``."""
    train_env_manager: EnvManager = field(default_factory=EnvManager)
    """Training env groups."""
    val_env_manager: EnvManager = field(
        default_factory=lambda: EnvManager(num_env_groups=VAL_BATCH_SIZE, group_size=1))
    """Validation env groups (RAGEN: 256 groups of 1)."""
    train_seed_start: int = TRAIN_SEED_START
    """Seed of the first training group; group k of the run uses ``train_seed_start + k``."""
    val_seed_start: int = VALIDATION_SEED_START
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
    """ROLL's meaning: score the sampled tokens with the actor before the update. ``false`` takes the old log-probs
    from the update's own first forward pass instead (exact while the weights have not moved; cached for later
    epochs); as in ROLL, recomputing is forced when an epoch takes more than one mini-batch (the weights move before
    later mini-batches are seen), for ``gigpo``, and with a reward KL (``add_token_level_kl``)."""
    use_sampler_logprobs: bool = False
    """Use the log-probs the sampler reported as old log-probs (no scoring pass; ours, not ROLL's). Needs
    ``top_p: 1``, a backend that reports them, and rows holding exactly the sampled tokens: check
    ``rollout/logprob_diff`` on a recomputing run first."""
    generation_backend: str = "hf"
    """``hf`` (transformers, CPU or GPU; the trained model itself generates) or ``vllm`` (GPU; a vLLM engine that
    receives the actor's weights after every update)."""
    vllm_gpu_memory_utilization: float = 0.5
    """GPU memory fraction the vLLM engine may take; the rest is the trainer's (RAGEN 0.5)."""
    vllm_sleep_mode: bool = False
    """Free the vLLM engine's weights and KV cache during each update and reload them with the new weights (vLLM
    sleep mode, CUDA only; TRL's ``vllm_enable_sleep_mode``): the update gets the whole GPU."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass of the update (actor and critic): less memory, ~30% more time.
    The models run in train mode with every dropout set to 0, so the loss is unchanged."""
    strategy: str = "ddp"
    """How ``torchrun`` processes share the models: ``ddp`` (a full copy per process, gradients averaged) or
    ``fsdp2`` (``torch.distributed.fsdp.fully_shard``: parameters, gradients and optimiser states sharded over the
    processes, each transformer block its own unit; ROLL's ``strategy_name: fsdp2_train``). A plain launch of one
    process: no difference; ``torchrun --nproc_per_node 1`` with ``fsdp2`` shards over a process group of one."""
    lora_target: str | None = None
    """LoRA through ``peft`` on these modules of actor and critic (ROLL: comma-separated module names, ``all`` for
    every linear layer); ``null`` trains every weight. Needs ``pip install -e '.[lora]'``."""
    lora_rank: int = 8
    """LoRA rank (ROLL ``lora_rank``)."""
    lora_alpha: int | None = None
    """LoRA scale numerator (ROLL ``lora_alpha``; ``null``: ``2 * lora_rank`` as in ROLL)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input (ROLL ``lora_dropout``). Keep 0: the loop relies on deterministic forward passes."""

    # -- advantages ------------------------------------------------------------------------------------------------
    train_reward: str = "env"
    """What the update optimises: ``env``, the env's turn rewards as they are (RAGEN, ROLL); ``success``, 1 on the
    last turn of a successful episode plus every turn's format penalty, with the env's shaping dropped
    (:func:`trainers.rl.samples.success_rewards`; Sokoban's -0.1 a step taught the default model to send one action a
    turn, docs/lab/2026-11-22-v1-boards-rl-recipe.md, "Why RL lost Sokoban"); ``progress``, ``success`` plus, on
    Sokoban, ``progress_weight`` times each turn's change in the distance to a solution (:mod:`trainers.rl.shaping`).
    Validation always reports success."""
    progress_weight: float = 0.5
    """With ``train_reward: progress``: the weight of a turn's progress, in success units per budget of moves brought
    nearer a solution (:mod:`trainers.rl.shaping`)."""
    adv_estimator: str = "grpo"
    """``grpo`` / ``reinforce`` (group-normalised episode score, one value per trajectory; identical in ROLL's
    agentic pipeline), ``gae`` (critic + GAE over generated tokens, PPO) or ``gigpo`` (step-level samples)."""
    reward_normalization: RewardNormalization = field(default_factory=RewardNormalization)
    """Normalisation of episode scores (for ``gigpo``: of both levels)."""
    rollout_filter_ratio: float = 1.0
    """StarPO-S: keep this fraction of env groups, those with the largest in-group std of raw scores (RAGEN). With
    ``dynamic_sampling`` it filters the ``num_env_groups`` groups kept from the pool."""
    rollout_filter_type: str = "std"
    """``std`` keeps the most varied groups, ``std_rev`` the least (RAGEN)."""
    dynamic_sampling: DynamicSampling = field(default_factory=DynamicSampling)
    """Oversampled rollout pool, groups kept by reward std, zero-variance groups dropped and refilled:
    ``{oversample, select, max_refill_rounds}``, the fields of :class:`DynamicSampling`."""
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
    reward_clip: float | None = None
    """Clamp the normalised episode score (GiGPO: the combined step value) to [-c, c] before advantages (ROLL)."""
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
    clip_ratio_c: float | None = None
    """Bound the loss of negative-advantage tokens at ``clip_ratio_c |A|`` (verl's dual clip, always on in RAGEN's
    runs at verl's 3.0); set, it replaces ``dual_clip_loss``'s bound. Null: ``dual_clip_loss`` decides."""
    value_clip: float | None = 0.5
    """Clip range of the value loss (ROLL ``value_clip``; RAGEN ``cliprange_value`` 0.5)."""
    entropy_loss_coef: float = 0.001
    """Entropy bonus coefficient (ROLL; RAGEN ``entropy_coeff`` 0.001). Negative: an entropy penalty, which sharpens
    the policy toward its own most likely replies (entropy minimisation, Agarwal et al. 2025, arXiv 2505.15134)."""
    add_token_level_kl: bool = False
    """Add the per-token penalty ``-init_kl_coef * KL(pi || pi_ref)`` to the rewards (ROLL: ``init_kl_coef`` acts
    only with it). The ``starpo`` preset turns it on (RAGEN's vanilla StarPO: 0.001, k1)."""
    init_kl_coef: float = 0.001
    """Coefficient of the reward KL penalty (ROLL): fixed, or the starting value of the adaptive controller."""
    target_kl: float | None = None
    """Adaptive KL control of the reward penalty (ROLL; Ziegler et al. 2019): after each iteration the coefficient
    moves toward keeping the batch's mean KL at this target (:func:`trainers.algos.losses.adaptive_kl_coef`). null:
    fixed."""
    kl_horizon: int = 10_000
    """Samples over which the adaptive controller may change the coefficient by 20% (ROLL)."""
    kl_penalty: str = "k1"
    """Estimator of the reward KL penalty: ``k1``/``kl``, ``k2``/``mse``, ``k3``/``low_var_kl`` (ROLL / verl)."""
    use_kl_loss: bool = False
    """Add ``kl_loss_coef * KL(pi || pi_ref)`` to the actor loss (ROLL; the GiGPO recipes)."""
    kl_loss_coef: float = 0.0
    """Coefficient of the KL loss (ROLL; GiGPO recipes 0.01)."""
    kl_loss_type: str = "k3"
    """Estimator of the KL loss (verl's name). k3 as ROLL: k1's gradient is zero in expectation, so a k1 loss
    would not pull the policy toward the reference."""
    max_grad_norm: float = 1.0
    """Gradient clipping of actor and critic (ROLL; RAGEN ``grad_clip``)."""
    learning_rate: float = 1e-4
    """Actor learning rate, AdamW (RAGEN: 1e-6 for Qwen2.5-0.5B; the small default model needs ~1e-4). 0 makes a
    frozen run: the start model, never changed, plays the run's own training rooms with its sampling streams and
    nothing is scored or updated; the control that the training curves are read against (docs/trainers.md,
    "Metrics")."""
    critic_learning_rate: float = 1e-3
    """Critic learning rate (RAGEN: 10x the actor's)."""
    critic_warmup: int = 0
    """Iterations at the start that update only the critic, not the actor (ROLL; ``gae`` only). The actor's
    learning-rate schedule (warm-up, then decay) runs over the ``max_steps - critic_warmup`` iterations that update
    it."""
    weight_decay: float = 0.01
    """AdamW weight decay (RAGEN 0.01)."""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    lr_scheduler_type: str = "constant"
    """``constant`` (RAGEN), ``linear`` or ``cosine`` decay to 0 at ``max_steps``; stepped once per iteration."""
    warmup_steps: int = 0
    """Linear warm-up over this many iterations."""

    async_rollout: AsyncRollout = field(default_factory=AsyncRollout)
    """Overlap generation and updates (``max_staleness >= 1``): the fields of :class:`AsyncRollout`."""

    # -- warnings --------------------------------------------------------------------------------------------------
    echo_trap: EchoTrapRule = field(default_factory=EchoTrapRule)
    """Thresholds of the collapse warnings (``warn/echo_trap``, ``warn/vanishing_gradient``, ``warn/success_drop``,
    ``warn/format_collapse``), e.g. ``echo_trap: {success_drop: 0.5, window: 5}``: the fields of
    :class:`trainers.runtime.metrics.EchoTrapRule`, whose defaults docs/trainers.md justifies."""

    def __post_init__(self) -> None:
        nest(self)
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
    def token_in_token_out(self) -> bool:
        """Whole-episode rows are generated and built token-in-token-out (both backends take token ids), so the rows
        hold exactly the ids the model read, whatever the chat template (Qwen3's rewrites history)."""
        return not self.step_rows

    @property
    def uses_critic(self) -> bool:
        return self.adv_estimator == "gae"

    @property
    def kl_in_reward(self) -> bool:
        """The reward carries the per-token KL penalty."""
        return self.add_token_level_kl and self.init_kl_coef > 0

    @property
    def uses_reference(self) -> bool:
        """The initial policy is needed for a KL term (a frozen copy, or with LoRA the actor with its adapters
        off)."""
        return self.kl_in_reward or (self.use_kl_loss and self.kl_loss_coef > 0)

    @property
    def lora(self) -> bool:
        return self.lora_target is not None

    @property
    def clip_low(self) -> float:
        return self.pg_clip_low if self.use_pg_clip_range else self.pg_clip

    @property
    def clip_high(self) -> float:
        return self.pg_clip_high if self.use_pg_clip_range else self.pg_clip

    @property
    def dual_clip_bound(self) -> float | None:
        """The dual clip's constant (:func:`trainers.algos.losses.ppo_policy_loss`'s ``clip_ratio_c``), or None."""
        if self.clip_ratio_c is not None:
            return self.clip_ratio_c
        return 1 + 2 * self.pg_clip if self.dual_clip_loss else None

    @property
    def groups_kept(self) -> int:
        """Env groups left after the StarPO-S filter (``floor(ratio * groups)``; a ratio keeping none is refused)."""
        groups = self.train_env_manager.num_env_groups
        return groups if self.rollout_filter_ratio >= 1 else int(self.rollout_filter_ratio * groups + 1e-9)

    @property
    def pool_env_manager(self) -> EnvManager:
        """The training groups one rollout round plays: ``train_env_manager`` with ``dynamic_sampling.oversample``
        times its groups (each tag's count scaled alike); ``train_env_manager`` itself without oversampling."""
        manager, factor = self.train_env_manager, self.dynamic_sampling.oversample
        if factor == 1:
            return manager
        partition = manager.num_groups_partition
        return dataclasses.replace(manager, num_env_groups=manager.num_env_groups * factor,
                                   num_groups_partition=None if partition is None else [n * factor for n in partition])

    @property
    def train_seed_range(self) -> range:
        """Every seed a training episode can use in this run (each iteration reserves the seeds of all its refill
        rounds, :func:`trainers.rl.dynamic_sampling.pool_round_index`)."""
        rounds = self.max_steps * (self.dynamic_sampling.max_refill_rounds + 1)
        groups = rounds * self.pool_env_manager.num_env_groups
        return range(self.train_seed_start, self.train_seed_start + groups)

    @property
    def val_seed_range(self) -> range:
        """The validation seeds."""
        return range(self.val_seed_start, self.val_seed_start + self.val_env_manager.num_env_groups)

    # -- checks ----------------------------------------------------------------------------------------------------

    def _check(self) -> None:
        check_types(self)
        choice("adv_estimator", self.adv_estimator, ADV_ESTIMATORS)
        choice("train_reward", self.train_reward, ("env", "success", "progress"))
        choice("reward_normalization.grouping", self.reward_normalization.grouping, GROUPINGS)
        choice("reward_normalization.method", self.reward_normalization.method, NORM_METHODS)
        choice("rollout_filter_type", self.rollout_filter_type, ("std", "std_rev"))
        self._check_dynamic_sampling()
        choice("batch_adjust_mode", self.batch_adjust_mode, BATCH_ADJUST_MODES)
        choice("loss_agg_mode", self.loss_agg_mode, AGG_MODES)
        choice("kl_penalty", self.kl_penalty, tuple(KL_ESTIMATORS))
        choice("kl_loss_type", self.kl_loss_type, tuple(KL_ESTIMATORS))
        choice("lr_scheduler_type", self.lr_scheduler_type, SCHEDULERS)
        choice("dtype", self.dtype, ("float32", "bfloat16", "auto"))
        choice("generation_backend", self.generation_backend, ("hf", "vllm"))
        if self.generation_backend == "vllm" and self.device == "cpu":
            raise ConfigError("generation_backend=vllm generates on a GPU: set device: cuda, or on a CPU "
                              "generation_backend: hf")
        choice("strategy", self.strategy, ("ddp", "fsdp2"))
        positive_int("lora_rank", self.lora_rank)
        if self.lora_dropout != 0 and self.lora_target is not None:
            raise ConfigError(f"lora_dropout={self.lora_dropout}: dropout stays off in this trainer (a forward pass "
                              "must be a function of the weights, so the first PPO ratio is 1); use 0")
        for name in ("max_steps", "ppo_epochs", "ppo_mini_batch_size", "micro_batch_size", "rollout_batch_size",
                     "val_batch_size", "max_new_tokens", "eval_steps", "save_total_limit", "kl_horizon"):
            positive_int(name, getattr(self, name))
        for name in ("save_steps", "warmup_steps", "train_seed_start", "val_seed_start", "critic_warmup"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be an integer >= 0")
        for prefix in ("train_env_manager", "val_env_manager"):
            self._check_env_manager(prefix)
        self._check_sizes()
        self._check_ranges()
        if self.reward_normalization.method == "identity" and self.adv_estimator == "gigpo":
            raise ConfigError("adv_estimator=gigpo needs reward_normalization.method mean or mean_std: identity would "
                              "add raw step returns to the advantage (ROLL's silent pitfall)")
        self._check_seeds()
        try:
            self.echo_trap.validate()
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def _check_dynamic_sampling(self) -> None:
        """``dynamic_sampling``: values, and what it is not implemented with."""
        sampling = self.dynamic_sampling
        positive_int("dynamic_sampling.oversample", sampling.oversample)
        if not isinstance(sampling.max_refill_rounds, int) or sampling.max_refill_rounds < 0:
            raise ConfigError(f"dynamic_sampling.max_refill_rounds={sampling.max_refill_rounds!r} must be an integer "
                              ">= 0 (bounded: DAPO's unbounded resampling is not offered)")
        choice("dynamic_sampling.select", sampling.select, SELECTION_RULES)
        if not sampling.enabled:
            return
        if self.train_env_manager.group_size < 2:
            raise ConfigError("dynamic_sampling ranks groups by in-group reward std, which needs "
                              f"train_env_manager.group_size >= 2 (it is {self.train_env_manager.group_size})")
        for name, value, unsupported, fix in [
                ("async_rollout.max_staleness", self.async_rollout.max_staleness,
                 self.async_rollout.max_staleness > 0, "0"),
                ("train_env_manager.opponent", self.train_env_manager.opponent,
                 self.train_env_manager.opponent is not None, "null")]:
            if unsupported:
                raise ConfigError(f"dynamic_sampling is not implemented with {name}={value!r}; set {name}: {fix}, "
                                  "or dynamic_sampling: {oversample: 1, max_refill_rounds: 0}")

    def _check_seeds(self) -> None:
        if not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed={self.seed} must be an integer from 0 to 2**63 - 1 (it seeds the run's random "
                              "streams)")
        train, val = self.train_seed_range, self.val_seed_range
        try:
            check_seeds_disjoint("training seeds", train, "validation seeds", val)
            check_seeds_disjoint("training seeds", train)
            check_seeds_disjoint("validation seeds", val)
        except ValueError as error:
            raise ConfigError(f"{error} (train_seed_start, val_seed_start; training starts at {TRAIN_SEED_START} "
                              f"by default, validation at {VALIDATION_SEED_START}, held-out test seeds from "
                              f"{TEST_SEEDS.start})") from None

    def _check_env_manager(self, prefix: str) -> None:
        manager: EnvManager = getattr(self, prefix)
        positive_int(f"{prefix}.num_env_groups", manager.num_env_groups)
        positive_int(f"{prefix}.group_size", manager.group_size)
        if not manager.tags or not all(isinstance(t, str) for t in manager.tags):
            raise ConfigError(f"{prefix}.tags={manager.tags!r} must be a non-empty list of env ids, e.g. "
                              "[AgentFrozenLake-v0]")
        if manager.env_kwargs.get("split") == "test":
            raise ConfigError(f"{prefix}.env_kwargs.split=test would train or validate on WebShop's held-out test "
                              "goals; leave split out (the seed picks the goals: training seeds play the train goals, "
                              "validation seeds the validation goals) or set train / validation")
        if manager.opponent is None:
            _check_env_ids(prefix, manager.tags)
        else:
            self._check_match_manager(prefix)
        partition = manager.num_groups_partition
        if partition is None and manager.num_env_groups < len(manager.tags):
            raise ConfigError(f"{prefix}.num_env_groups={manager.num_env_groups} is fewer than its "
                              f"{len(manager.tags)} tags, so an even split leaves a tag without a group: give more "
                              "groups, fewer tags, or num_groups_partition")
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

    def _check_match_manager(self, prefix: str) -> None:
        """An env manager with an ``opponent`` (trainers/rl/matches.py)."""
        manager: EnvManager = getattr(self, prefix)
        choice(f"{prefix}.opponent", manager.opponent, OPPONENTS)
        choice(f"{prefix}.learner_seats", manager.learner_seats, ("alternate", "player_0", "player_1"))
        positive_int(f"{prefix}.snapshot_every", manager.snapshot_every)
        env_id = manager.tags[0]
        if len(manager.tags) != 1 or not (env_id in MULTIAGENT_ENVS or env_id.startswith("TextArena/")):
            raise ConfigError(f"{prefix}.tags={manager.tags} must hold one two-player env id with an opponent: "
                              f"one of {sorted(MULTIAGENT_ENVS)} or TextArena/<two-player id>")
        if manager.opponent in FIXED_OPPONENTS and env_id not in BARGAIN_IDS:
            raise ConfigError(f"{prefix}.opponent={manager.opponent} plays Bargain only; use self or snapshot")
        if prefix == "val_env_manager" and manager.opponent not in FIXED_OPPONENTS:
            raise ConfigError(f"val_env_manager.opponent={manager.opponent} learns with the run, so evaluations would "
                              f"not be comparable: set val_env_manager.opponent to {' or '.join(FIXED_OPPONENTS)}")
        if self.sequence_length is not None:
            raise ConfigError(f"sequence_length={self.sequence_length} with {prefix}.opponent: a length cap is not "
                              "implemented for two-player rollouts; set sequence_length: null")
        if manager.opponent == "snapshot" and self.generation_backend != "hf":
            raise ConfigError(f"{prefix}.opponent=snapshot copies the actor into a second policy on the hf "
                              "backend: set generation_backend: hf")

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
                                ("lambd", 0, 1), ("step_reward_gamma", 0, 1), ("init_kl_coef", 0, None),
                                ("kl_loss_coef", 0, None), ("weight_decay", 0, None), ("progress_weight", 0, None)]:
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                raise ConfigError(f"{name}={value} must be in [{low}, {high if high is not None else 'inf'})")
        if self.use_sampler_logprobs and self.top_p < 1:
            raise ConfigError("use_sampler_logprobs=true with top_p < 1: the sampler's log-probs are then of the "
                              "truncated distribution, not the policy's; set top_p=1 or use_sampler_logprobs=false")
        if self.temperature == 0:
            raise ConfigError("temperature=0 (greedy) gives no exploration and no valid log-probs to train on; use "
                              "temperature > 0 for training rollouts (val_temperature may be 0)")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p={self.top_p} must be in (0, 1]")
        if self.learning_rate < 0:
            raise ConfigError(f"learning_rate={self.learning_rate} must be >= 0 (0: a frozen run)")
        for name in ("critic_learning_rate", "max_grad_norm"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be > 0")
        if not 0 <= self.clip_low < 1 or self.clip_high < 0:
            raise ConfigError(f"ratio clip low={self.clip_low} must be in [0, 1) and high={self.clip_high} >= 0")
        if self.clip_ratio_c is not None and not self.clip_ratio_c > 1:
            raise ConfigError(f"clip_ratio_c={self.clip_ratio_c} must be > 1 (verl's is 3.0), or null: no dual clip")
        for name in ("advantage_clip", "value_clip"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name}={value} must be > 0, or null to disable")
        if self.use_kl_loss and self.kl_loss_coef == 0:
            notice("use_kl_loss: true with kl_loss_coef: 0 adds no KL term (no reference model is kept); set "
                   "kl_loss_coef, e.g. 0.01 (verl-agent's and ROLL's), for one")
        if self.use_kl_loss and self.kl_in_reward:
            raise ConfigError("both use_kl_loss and add_token_level_kl with init_kl_coef > 0 are set: pick one place "
                              "for the KL term (add_token_level_kl=false for a KL loss, or use_kl_loss=false)")
        if self.target_kl is not None and (self.target_kl <= 0 or not self.kl_in_reward):
            raise ConfigError(f"target_kl={self.target_kl} adapts the reward KL penalty: it must be > 0 and needs "
                              "add_token_level_kl=true with init_kl_coef > 0")
        if self.critic_warmup and not self.uses_critic:
            raise ConfigError(f"critic_warmup={self.critic_warmup} needs a critic (adv_estimator=gae); set it to 0")
        if self.reward_clip is not None and self.reward_clip <= 0:
            raise ConfigError(f"reward_clip={self.reward_clip} must be > 0, or null to disable")
        if self.sequence_length is not None and (not isinstance(self.sequence_length, int)
                                                 or self.sequence_length <= self.max_new_tokens):
            raise ConfigError(f"sequence_length={self.sequence_length} must be an integer above max_new_tokens="
                              f"{self.max_new_tokens} (it caps prompt + reply), or null")
        self._check_async()
        for name in ("generation_batch_size", "num_threads"):
            if getattr(self, name) is not None:
                positive_int(name, getattr(self, name))

    def _check_async(self) -> None:
        """``async_rollout``: what the rollout worker process supports today."""
        staleness, cap = self.async_rollout.max_staleness, self.async_rollout.behaviour_weight_cap
        if not isinstance(staleness, int) or isinstance(staleness, bool) or staleness < 0:
            raise ConfigError(f"async_rollout.max_staleness={staleness!r} must be an integer >= 0 (0: synchronous)")
        if cap is not None and cap <= 1:
            raise ConfigError(f"async_rollout.behaviour_weight_cap={cap} must be > 1, or null for no cap")
        if staleness == 0:
            return
        for name, value, unsupported, fix in [
                ("generation_backend", self.generation_backend, self.generation_backend != "hf", "hf"),
                ("use_sampler_logprobs", self.use_sampler_logprobs, self.use_sampler_logprobs,
                 "false (the proximal policy's log-probs are recomputed; the sampler's are the behaviour policy's)"),
                ("top_p", self.top_p, self.top_p < 1, "1 (the behaviour log-probs must be the policy's)"),
                ("train_env_manager.opponent", self.train_env_manager.opponent,
                 self.train_env_manager.opponent is not None, "null")]:
            if unsupported:
                raise ConfigError(f"async_rollout.max_staleness={staleness} is not implemented with {name}={value!r}; "
                                  f"set {name}: {fix}, or async_rollout.max_staleness: 0")

    # -- I/O -------------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (tuples as lists), loadable again with :func:`config_from_dict`."""
        data = dataclasses.asdict(self)
        data["adam_betas"] = list(self.adam_betas)
        return data

    def save(self, path: str | os.PathLike) -> None:
        config_loading.save_yaml(self.to_dict(), path)


def _check_env_ids(prefix: str, tags: Sequence[str]) -> None:
    for tag in tags:
        try:
            known = registered(tag)
        except UserError as err:
            raise ConfigError(f"{prefix}.tags: {err}") from None
        if not known:
            close = difflib.get_close_matches(tag, [k for k in gym.registry if k.startswith("Agent")], n=1,
                                              cutoff=0.8)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigError(f"{prefix}.tags: {tag!r} is not a registered env id; {hint}`agentgym-bench envs` "
                              f"lists them; {OWN_ENV_HINT}")


def _read_roll_keys(data: dict[str, Any]) -> dict[str, Any]:
    """Drop :data:`IGNORED_KEYS` and map ROLL tag names to env ids, each with a notice."""
    out = {}
    for key, value in data.items():
        if key in IGNORED_KEYS[""]:
            notice(f"ignoring {key} (ROLL infrastructure; no meaning here)")
            continue
        if key in ("train_env_manager", "val_env_manager") and isinstance(value, Mapping):
            value = dict(value)
            for name in IGNORED_KEYS["env_manager"]:
                if name in value:
                    notice(f"ignoring {key}.{name} (ROLL infrastructure; no meaning here)")
                    del value[name]
            if isinstance(value.get("tags"), list):
                for tag in value["tags"]:
                    if tag in ROLL_TAGS:
                        notice(f"{key}.tags: reading ROLL's {tag} as {ROLL_TAGS[tag]}")
                value["tags"] = [ROLL_TAGS.get(t, t) if isinstance(t, str) else t for t in value["tags"]]
        out[key] = value
    return out


def _validation_defaults(merged: dict[str, Any]) -> dict[str, Any]:
    """``val_env_manager`` takes the training tags, env kwargs, history window, opponent and learner seats unless it
    sets its own; its group count follows ``val_batch_size`` (or sets it) when only one of the two is given."""
    train = merged.get("train_env_manager") or {}
    val = dict(merged.get("val_env_manager") or {})
    if isinstance(train, Mapping):
        for key in ("tags", "env_kwargs", "history_length", "opponent", "learner_seats"):
            if key in train and key not in val:
                val[key] = train[key]
    val.setdefault("group_size", 1)
    size = val["group_size"]
    if "num_env_groups" not in val:
        batch = merged.get("val_batch_size", VAL_BATCH_SIZE)
        if isinstance(batch, int) and isinstance(size, int) and size > 0:
            val["num_env_groups"] = max(1, batch // size)
    elif "val_batch_size" not in merged and isinstance(val["num_env_groups"], int) and isinstance(size, int):
        merged = {**merged, "val_batch_size": val["num_env_groups"] * size}
    return {**merged, "val_env_manager": val}


def _prepare(merged: dict[str, Any]) -> dict[str, Any]:
    """ROLL's infrastructure keys dropped and its tag names mapped (with a notice each), the validation manager's
    defaults, then the ``preset`` under the rest."""
    merged = _validation_defaults(_read_roll_keys(merged))
    preset = merged.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise ConfigError(f"preset={preset!r} is not one of {', '.join(PRESETS)}")
        merged = merge(PRESETS[preset], merged)
    if "adam_betas" in merged:
        merged["adam_betas"] = tuple(merged["adam_betas"])
    return merged


def config_from_dict(data: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any] = ()) -> TrainConfig:
    """Defaults < ``preset`` < ``data`` < ``overrides`` (``key=value`` strings or a nested dict), through the one
    loader (:func:`trainers.runtime.config_loading.config_from_dict`).

    ROLL's infrastructure keys are dropped and its tag names mapped, with a notice each (module docstring)."""
    return config_loading.config_from_dict(TrainConfig, data, overrides, prepare=_prepare)


def load_config(path: str | os.PathLike, overrides: Sequence[str] | Mapping[str, Any] = ()) -> TrainConfig:
    """Read a YAML config file (:func:`trainers.runtime.config_loading.read_yaml`), then apply ``overrides``.

    Raises:
        ConfigError: the file is missing, empty, not YAML or not a mapping (the message names the file), or the
            config is invalid.
    """
    return config_from_dict(config_loading.read_yaml(path), overrides)
