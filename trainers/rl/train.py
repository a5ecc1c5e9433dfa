"""The training loop of StarPO, StarPO-S and GiGPO: ``main(config)``.

One iteration (:func:`run_iteration`), top to bottom (RAGEN arXiv 2504.20073; GiGPO arXiv 2505.10978)::

    rollout      num_env_groups x group_size episodes with the current policy (each rank plays its share); with
                 dynamic_sampling a pool of oversample x as many groups, refilled while it holds too few
                 informative (non-zero reward variance) groups                      -- trainers/rl/dynamic_sampling.py
    samples      one row per episode (StarPO, StarPO-S) or per turn (GiGPO; any      -- trainers/rl/samples.py
                 algorithm with a history window)
    filter       dynamic_sampling: keep num_env_groups groups of the pool by reward std (RAGEN-2, DAPO);
                 StarPO-S: keep the env groups with the largest reward std
    forward      old log-probs, reference log-probs (KL), critic values (no grad)    -- trainers/rl/ppo.py
    advantages   grpo / reinforce | gae | gigpo, then KL reward, whitening, clip    -- trainers/algos/advantages.py
    adjust       rows per turn: make the row count a multiple of the mini-batch (batch_adjust_mode)
    update       ppo_epochs x mini-batches: clipped policy loss - entropy (+ KL loss),  -- trainers/rl/ppo.py,
                 critic loss                                                           trainers/algos/losses.py
    metrics      one JSON line; Echo Trap warning; evaluation on the validation seeds; checkpoint

This file orchestrates; the math lives in ``trainers.algos.advantages`` / ``trainers.algos.losses`` /
``trainers.algos.masked`` and the scoring and update in ``trainers.rl.ppo``. Under ``torchrun`` every rank rolls out
its share of env groups, the trajectories are gathered so every rank holds the global batch, advantages are computed
identically everywhere, and each mini-batch is split over the ranks with DDP averaging the gradients: N processes make
the same update as one process with the same global batch.

With ``async_rollout.max_staleness >= 1`` the rollout runs in a worker process (:mod:`trainers.rl.async_rollout`): the
iteration takes the worker's next batch, played by weights at most ``max_staleness`` iterations old, scores it with
the current weights (the proximal policy) and updates with AReaL's decoupled PPO objective; ``0`` is the synchronous
loop above, the same code path.

Dropout stays off (the models are kept in ``eval()`` mode, as TRL and verl disable it for RL), so a forward pass is a
function of the weights and the ratio of the first mini-batch is exactly 1.

Run: ``agentgym-bench train CONFIG [key=value ...]`` or ``torchrun --nproc_per_node N -m trainers.cli CONFIG``
(:mod:`trainers.cli`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch  # noqa: TID253 - trainers/ runs on torch
import torch.distributed  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench import run_folder
from agentgym_bench.paths import resolve_model
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.trajectory import Trajectory
from trainers.algos.advantages import select_groups_by_std, state_ids_from_keys
from trainers.algos.losses import adaptive_kl_coef, approx_kl, behaviour_weights
from trainers.algos.masked import explained_variance, masked_mean
from trainers.rl.async_rollout import RolloutBatch, RolloutWorker, over_bound, state_tensor
from trainers.rl.config import ConfigError, TrainConfig
from trainers.rl.dynamic_sampling import count_informative, fill_pool, pool_round_index, select_pool_groups
from trainers.rl.models import Models, load_models, make_optimizers
from trainers.rl.ppo import Batch, compute_advantages, ppo_update, score_samples
from trainers.rl.rollouts import (
    Sampler,
    make_env_groups,
    pass_at_k,
    play,
    play_validation,
    prompt_fits,
    rollout_metrics,
    seed_from,
)
from trainers.rl.samples import (
    Samples,
    adjust_batch,
    episode_first_rows,
    step_samples,
    success_rewards,
    trajectory_samples,
)
from trainers.rl.shaping import progress_rewards
from trainers.runtime import checkpoint as ckpt
from trainers.runtime import compute_dtype, fsdp, lora
from trainers.runtime.distributed import Dist, init_distributed, shutdown_distributed
from trainers.runtime.metrics import WARNINGS, MetricsLog, plot_metrics, success_gain

if TYPE_CHECKING:
    from trainers.rl.matches import MatchGroups  # imports pettingzoo (the multiagent extra)

# ----------------------------------------------------------------------------------------------------- iteration


def rewarded(config: TrainConfig, trajectories: list[Trajectory]) -> list[Trajectory]:
    """The trajectories with the rewards the update optimises (``TrainConfig.train_reward``)."""
    if config.train_reward == "progress":
        return progress_rewards(trajectories, config.progress_weight)
    return [success_rewards(t) for t in trajectories] if config.train_reward == "success" else trajectories


def build_samples(config: TrainConfig, trajectories: list[Trajectory], tokenizer: Any, max_length: int | None):
    """Training rows: one per turn (step rows), or one per episode (token-in-token-out when the rollout was,
    ``TrainConfig.token_in_token_out``), rewarded as ``TrainConfig.train_reward`` says."""
    trajectories = rewarded(config, trajectories)
    if config.step_rows:
        return step_samples(trajectories, tokenizer, max_length=max_length)
    return trajectory_samples(trajectories, tokenizer, max_length=max_length, tito=config.token_in_token_out)


def select_groups(config: TrainConfig, samples: Samples) -> tuple[torch.Tensor | None, dict[str, float]]:
    """The rows of the env groups trained on -> ``(keep mask (B,) or None for all, metrics)``: with
    ``dynamic_sampling`` the ``num_env_groups`` groups of the pool it keeps, then StarPO-S's ``rollout_filter_ratio``
    among those. Both rank one training score per episode; the choice applies to all rows of a kept group.

    ``rollout/informative_share`` (groups with non-zero reward std, over every group played) is logged always; with
    ``dynamic_sampling`` also the pool's size, the groups it dropped and the zero-variance groups it had to keep."""
    first = episode_first_rows(samples)
    scores, groups = samples.scores[first], samples.group_ids[first]
    num_groups = int(torch.unique(groups).numel())
    pool = select_pool_groups(scores, groups, min(config.train_env_manager.num_env_groups, num_groups),
                              config.dynamic_sampling.select)
    record = {"rollout/informative_share": float(pool.informative.double().mean())}
    if config.dynamic_sampling.enabled:
        record.update({"rollout/pool_groups": float(num_groups),
                       "rollout/groups_dropped": float((~pool.group_kept).sum()),
                       "rollout/uninformative_kept": float((pool.group_kept & ~pool.informative).sum())})
    else:
        pool = None
    if config.rollout_filter_ratio < 1:
        inside = pool.keep if pool is not None else torch.ones_like(scores, dtype=torch.bool)
        chosen = select_groups_by_std(scores[inside], groups[inside], config.rollout_filter_ratio,
                                      config.rollout_filter_type)
        kept_ids = chosen.group_ids[chosen.group_kept]
    elif pool is not None:
        kept_ids = pool.group_ids[pool.group_kept]
    else:
        return None, record
    return torch.isin(samples.group_ids, kept_ids), record


def group_std_metrics(samples: Samples, keep: torch.Tensor | None) -> dict[str, float]:
    """Mean in-group std of the raw episode scores over all groups, and over the kept groups."""
    first = episode_first_rows(samples)
    selection = select_groups_by_std(samples.scores[first], samples.group_ids[first], 1.0)
    out = {"reward/in_group_std": float(selection.group_std.mean())}
    if keep is not None:
        kept_groups = torch.isin(selection.group_ids, torch.unique(samples.group_ids[keep]))
        out["reward/in_group_std_kept"] = float(selection.group_std[kept_groups].mean())
    else:
        out["reward/in_group_std_kept"] = out["reward/in_group_std"]
    return out


def recompute_old_logprobs(config: TrainConfig, rows: int) -> bool:
    """Whether the actor scores the rows before the update (ROLL's rule for ``enable_old_logprobs_recompute``).

    Forced, as in ROLL, when the update takes more than one optimiser step per epoch (the weights move before later
    mini-batches are seen), for ``gigpo``, and with a reward KL (the penalty needs them before the update). Never
    with ``use_sampler_logprobs``."""
    if config.use_sampler_logprobs:
        return False
    return (config.enable_old_logprobs_recompute or config.step_level or config.kl_in_reward
            or rows > config.ppo_mini_batch_size)


def train_step(config: TrainConfig, models: Models, optimizers: dict[str, Any], trajectories: list[Trajectory],
               dist: Dist, rng: np.random.Generator, update_actor: bool = True,
               kl_coef: float | None = None) -> dict[str, float]:
    """Everything after the rollout: samples, filter, scoring, advantages, batch adjustment, update -> metrics.

    ``kl_coef`` is the reward KL coefficient of this iteration (default ``init_kl_coef``); with ``target_kl`` the
    record's ``reward/next_kl_coef`` is the adaptive controller's next one."""
    samples = build_samples(config, trajectories, models.tokenizer, _max_length(config, models))
    keep, record = select_groups(config, samples)
    record.update(group_std_metrics(samples, keep))
    if keep is not None:
        samples = samples.select(keep)
    record["rollout/groups_kept"] = float(len(torch.unique(samples.group_ids)))
    asynchronous = config.async_rollout.max_staleness > 0
    recompute = asynchronous or recompute_old_logprobs(config, len(samples))  # async: the proximal policy's
    tick = time.perf_counter()
    scored = score_samples(config, models, samples, dist, old_logprob=recompute)
    record["time/score"] = time.perf_counter() - tick
    if config.use_sampler_logprobs:
        scored["old_logprob"] = sampler_logprob_batch(trajectories, samples, config.step_rows)
    batch, info = compute_advantages(config, samples, scored, kl_coef)
    record.update(info)
    if asynchronous:  # decoupled PPO: the sampler's log-probs are the (stale) behaviour policy's
        batch.behav_logprob = sampler_logprob_batch(trajectories, samples, config.step_rows)
        record.update(behaviour_metrics(batch, config.async_rollout.behaviour_weight_cap))
    if config.target_kl is not None:
        record["reward/next_kl_coef"] = adaptive_kl_coef(info["reward/kl_coef"], info["reward/kl"], config.target_kl,
                                                         len(samples), config.kl_horizon)
    if recompute:
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
    record.update(ppo_update(config, models, optimizers, batch, dist, rng, update_actor))
    return record


def behaviour_metrics(batch: Batch, cap: float | None) -> dict[str, float]:
    """How far the behaviour policy (the stale weights that sampled the batch) is from the proximal one (the
    learner's before this update), over the generated tokens: the distribution of the importance weights
    ``w = pi_prox / pi_behav`` (mean, 5% / 50% / 95% quantiles, max), the share of tokens over ``cap`` (weight 0),
    the mean |log pi_prox - log pi_behav| and the k3 estimate of KL(pi_behav || pi_prox)."""
    mask = batch.mask
    weight = behaviour_weights(batch.old_logprob, batch.behav_logprob)[0][mask].double()
    q05, q50, q95 = torch.quantile(weight, torch.tensor([0.05, 0.5, 0.95], dtype=weight.dtype)).tolist()
    return {"async/is_weight_mean": float(weight.mean()), "async/is_weight_p05": q05, "async/is_weight_p50": q50,
            "async/is_weight_p95": q95, "async/is_weight_max": float(weight.max()),
            "async/capped_share": float((weight > cap).double().mean()) if cap is not None else 0.0,
            "async/logprob_gap": float((batch.old_logprob - batch.behav_logprob)[mask].abs().mean()),
            "async/behaviour_kl": float(approx_kl(batch.old_logprob, batch.behav_logprob, mask))}


def _max_length(config: TrainConfig, models: Models) -> int | None:
    """The longest row allowed: ``sequence_length``, else the model's positions."""
    return config.sequence_length or getattr(models.actor_module.config, "max_position_embeddings", None)


def _row_logprobs(trajectories: list[Trajectory], samples: Samples, step_rows: bool) -> list[list[float]] | None:
    """Per row of ``samples``, the sampler's log-probs of the row's generated tokens in order; ``None`` if a turn
    has none (the backend did not report them)."""
    rows = []
    for episode, step in zip(samples.episode_ids.tolist(), samples.step_index.tolist(), strict=True):
        turns = [trajectories[episode].turns[step]] if step_rows else trajectories[episode].turns
        if any(turn.logprobs is None for turn in turns):
            return None
        rows.append([lp for turn in turns for lp in turn.logprobs])
    return rows


def _scatter_rows(rows: list[list[float]], mask: torch.Tensor) -> torch.Tensor:
    """(B, T) zeros with each row's values at its ``mask`` positions, in order (one copy for the whole batch)."""
    out = torch.zeros(mask.shape)
    out[mask] = torch.tensor(list(chain.from_iterable(rows)), dtype=out.dtype)  # row-major, as the rows are
    return out


def sampler_logprob_batch(trajectories: list[Trajectory], samples: Samples, step_rows: bool) -> torch.Tensor:
    """(B, T-1) the sampler's log-probs of each row's generated tokens, aligned like
    :func:`trainers.rl.ppo.token_logprobs`.

    Raises:
        ValueError: the backend reported no log-probs, or a row's generated tokens do not match them in number.
    """
    rows = _row_logprobs(trajectories, samples, step_rows)
    if rows is None:
        raise ValueError("the generation backend reported no log-probs; set use_sampler_logprobs=false")
    mask = samples.loss_mask[:, 1:]
    if [len(r) for r in rows] != mask.sum(1).tolist():
        raise ValueError("a row's generated tokens do not match the sampled log-probs; set "
                         "use_sampler_logprobs=false")
    return _scatter_rows(rows, mask)


def _rollout_logprob_gap(trajectories: list[Trajectory], samples: Samples, batch: Batch,
                         config: TrainConfig) -> float | None:
    """Mean over rows of the mean |recomputed - sampled| log-prob over the row's generated tokens (temperature
    applied to both; top_p = 1).

    About 0 when the training rows hold exactly what the model read and sampled. Whole-episode rows differ after
    the first turn if a reply does not re-tokenise to its sampled ids (the model then read the re-tokenised text,
    e.g. an untrained model's stray special tokens); ``inf`` if the token counts disagree.
    """
    rows = None if config.top_p < 1 else _row_logprobs(trajectories, samples, config.step_rows)
    if rows is None:
        return None
    counts = batch.mask.sum(1)
    if [len(r) for r in rows] != counts.tolist():
        return float("inf")
    gap = ((batch.old_logprob - _scatter_rows(rows, batch.mask)).abs() * batch.mask).sum(1) / counts
    return float(gap.mean())


# -------------------------------------------------------------------------------------------------------- main


@dataclass
class TrainResult:
    """What ``main`` returns: the run folder, every metrics record, and the first and last evaluations."""

    output_dir: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    first_eval: list[bool] = field(default_factory=list)
    last_eval: list[bool] = field(default_factory=list)


@dataclass
class Run:
    """The state of one run that every iteration reads and updates."""

    config: TrainConfig
    dist: Dist
    models: Models
    optimizers: dict[str, Any]
    schedulers: dict[str, Any]
    rng: np.random.Generator
    sampler: Sampler
    train_groups: EnvGroups | MatchGroups
    val_groups: EnvGroups | MatchGroups
    log: MetricsLog | None
    result: TrainResult
    t0: float
    start: int = 0
    kl_coef: float = 0.0
    worker: RolloutWorker | None = None
    """The rollout worker process (``async_rollout.max_staleness >= 1``), else ``None``."""

    @property
    def val_seed(self) -> int:
        return seed_from(self.config.seed, 3)

    @property
    def prompt_fits(self) -> Any:
        """ROLL's ``sequence_length`` as the engine's per-turn check (``None`` without a cap)."""
        return prompt_fits(self.config, self.models.tokenizer)


def _check_world(config: TrainConfig, dist: Dist) -> None:
    for name, value in [("train_env_manager.num_env_groups", config.train_env_manager.num_env_groups),
                        ("val_env_manager.num_env_groups", config.val_env_manager.num_env_groups),
                        ("ppo_mini_batch_size", config.ppo_mini_batch_size)]:
        if value % dist.world_size:
            raise ConfigError(f"{name}={value} must be divisible by the number of processes ({dist.world_size})")


def start_run(config: TrainConfig, dist: Dist, started: float) -> Run:
    """Check what can fail early (model path, env kwargs), then load or resume models, optimisers and streams."""
    resolve_model(config.pretrain)
    _check_world(config, dist)
    train_groups = make_env_groups(config.pool_env_manager, "train_env_manager", dist, config.train_seed_start,
                                   fixed=False, config_seed=config.seed)
    val_groups = make_env_groups(config.val_env_manager, "val_env_manager", dist, config.val_seed_start, fixed=True,
                                 config_seed=config.seed)
    out = Path(config.output_dir)
    resume = ckpt.find_checkpoint(out, config.resume_from_checkpoint)
    if resume is not None:
        ckpt.check_resumable(resume, config.to_dict())
        ckpt.check_start(out, resolve_model(config.pretrain))
    # dtype auto: chosen now on CUDA, read back when resuming, or left for the probe once the actor is loaded
    config = _with_dtype(config, dist, out, None, resume is not None)
    models = load_models(config, dist, resume)
    config = _with_dtype(config, dist, out, models.actor_module, resume is not None)
    optimizers, schedulers = make_optimizers(config, models)
    rng = np.random.default_rng(seed_from(config.seed, 1))
    sampler = Sampler(config, models.actor_module, models.tokenizer, dist,
                      str(resume / "actor") if resume else resolve_model(config.pretrain))
    state = ckpt.load_state(resume, dist, optimizers, schedulers, models, config.strategy) if resume else {}
    start, elapsed = state.get("step", 0), state.get("elapsed", 0.0)
    if resume is not None:
        rng.bit_generator.state = state["numpy_rng"]
        sampler.load_state(state["policy_rng"])
        train_groups.iteration = start  # the seed counter: training groups of iteration k use seeds from k
    if dist.is_main:
        out.mkdir(parents=True, exist_ok=True)
        config.save(out / run_folder.CONFIG)
        if resume is None:
            ckpt.record_start(out, resolve_model(config.pretrain))
    log = MetricsLog(out / run_folder.METRICS, resume_step=start if resume else None) if dist.is_main else None
    last = [] if run_folder.read_summary(out) else state.get("last_eval", [])  # killed after its last checkpoint
    result = TrainResult(out, log.history() if log else [], state.get("first_eval", []), last)
    return Run(config, dist, models, optimizers, schedulers, rng, sampler, train_groups, val_groups, log, result,
               t0=started - elapsed, start=start, kl_coef=state.get("kl_coef", config.init_kl_coef))


def _with_dtype(config: TrainConfig, dist: Dist, out: Path, model: torch.nn.Module | None,
                resumed: bool) -> TrainConfig:
    """``config`` with ``dtype: auto`` resolved where it can be (:func:`trainers.runtime.compute_dtype.resolve`)."""
    dtype = compute_dtype.resolve(config.dtype, dist.device, out, model, is_main=dist.is_main, resumed=resumed,
                                  share=lambda record: dist.gather(record)[0])
    return config if dtype == config.dtype else dataclasses.replace(config, dtype=dtype)


def generating(run: Run) -> contextlib.AbstractContextManager:
    """Around ``hf`` generation with a sharded actor: the whole actor gathered (:func:`trainers.runtime.fsdp.
    gathered`), so processes can generate different numbers of tokens; nothing otherwise."""
    return contextlib.nullcontext() if run.sampler.is_vllm else fsdp.gathered(run.models.actor_module)


class PlainWeights:
    """The actor's weights as the plain Hugging Face model names them, for a vLLM engine: its own state dict, or
    gathered from the shards (FSDP2, on every process) and with LoRA merged into the base weights. Computed only
    when read (``state_dict()``), so the ``hf`` backend, which needs no push, pays nothing."""

    def __init__(self, actor: torch.nn.Module):
        self.actor = actor

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = fsdp.replicated_state_dict(self.actor)
        return lora.merged_state_dict(state, lora.layer_scales(self.actor)) if lora.is_lora(self.actor) else state


def run_iteration(run: Run, step: int) -> dict[str, Any]:
    """Iteration ``step`` (1-based): rollout, update, metrics, evaluation, checkpoint -> its metrics record."""
    config, dist = run.config, run.dist
    tick = time.perf_counter()
    batch = None
    refills = 0
    if run.worker is None:
        with run.sampler.generation_context(), generating(run):
            trajectories, refills = play_pool(run, step)
        run.sampler.release()
    else:  # played by the worker process (trainers/rl/async_rollout.py)
        batch = run.worker.next_batch(step)
        trajectories = batch.trajectories
        run.sampler.load_state(state_tensor(batch.sampler_state))  # the checkpoint keeps the worker's stream
    record: dict[str, Any] = {"step": step, **rollout_metrics(trajectories, "reward", turn_prefix="rollout")}
    record["reward/pass@k"] = pass_at_k(trajectories)
    if config.dynamic_sampling.enabled:
        record["rollout/refill_rounds"] = float(refills)
    record["time/rollout"] = time.perf_counter() - tick
    dropped = batch is not None and over_bound(step, batch.policy_version, config.async_rollout.max_staleness)
    if batch is not None:
        record.update(_lag_metrics(batch, step, dropped))
    tock = time.perf_counter()
    update_actor = step > config.critic_warmup
    frozen = config.learning_rate == 0  # a frozen run: nothing to score or update
    if not dropped and not frozen:
        record.update(train_step(config, run.models, run.optimizers, trajectories, dist, run.rng, update_actor,
                                 run.kl_coef))
    run.kl_coef = record.pop("reward/next_kl_coef", run.kl_coef)
    if run.worker is None:
        run.sampler.sync(PlainWeights(run.models.actor_module))
    else:
        run.worker.publish(PlainWeights(run.models.actor_module).state_dict(), version=step)
    for name, scheduler in run.schedulers.items():
        record["loss/lr" if name == "actor" else "critic/lr"] = scheduler.get_last_lr()[0]
        if not frozen and (name == "critic" or update_actor):  # the actor's schedule counts its own steps
            scheduler.step()
    record["time/update"] = time.perf_counter() - tock
    record.update(config.echo_trap.check(run.result.records + [record]))
    if step % config.eval_steps == 0 or step == config.max_steps:
        tock = time.perf_counter()
        with generating(run):
            val, run.result.last_eval = play_validation(run.val_groups, run.sampler, config, dist, run.val_seed,
                                                        run.prompt_fits)
        record.update(val)
        record["time/eval"] = time.perf_counter() - tock
    record["time/step"] = time.perf_counter() - tick
    record["time/total"] = time.perf_counter() - run.t0
    _write(run, record)
    if (config.save_steps and step % config.save_steps == 0) or step == config.max_steps:
        ckpt.save(run.result.output_dir, step, run.models, run.optimizers, run.schedulers, dist, config, {
            "step": step, "elapsed": record["time/total"], "numpy_rng": run.rng.bit_generator.state,
            "policy_rng": run.sampler.state(), "first_eval": run.result.first_eval, "kl_coef": run.kl_coef,
            "last_eval": run.result.last_eval})
    return record


def play_pool(run: Run, step: int) -> tuple[list[Trajectory], int]:
    """The episodes of iteration ``step``: one round of the training groups (with ``dynamic_sampling``, the pool of
    ``oversample x num_env_groups`` groups), then refill rounds while the pool holds fewer than ``num_env_groups``
    informative groups, at most ``max_refill_rounds`` (:func:`trainers.rl.dynamic_sampling.fill_pool`) -> ``(every
    round's trajectories in the order played, refill rounds played)``. Round ``r`` plays the seeds of rollout
    :func:`~trainers.rl.dynamic_sampling.pool_round_index` (``step - 1`` without refills). Every rank holds all
    trajectories, so every rank makes the same decision."""
    config, dist = run.config, run.dist
    rounds = config.dynamic_sampling.max_refill_rounds

    def play_round(refill_round: int) -> list[Trajectory]:
        run.train_groups.iteration = pool_round_index(step, refill_round, rounds)
        return play(run.train_groups, run.sampler.train, config.train_env_manager.history_length, dist,
                    run.prompt_fits)

    def informative(pool: list[Trajectory]) -> int:
        scored = rewarded(config, pool)
        return count_informative(torch.tensor([t.episode_reward for t in scored], dtype=torch.float32),
                                 state_ids_from_keys([t.group_key for t in scored]))

    return fill_pool(play_round, informative, config.train_env_manager.num_env_groups, rounds)


def _lag_metrics(batch: RolloutBatch, step: int, dropped: bool) -> dict[str, float]:
    """The batch's policy version, its lag behind the learner (at version ``step - 1``), whether it was dropped
    (share of the iteration's samples: 0 or 1, one batch per iteration) and the worker's generation time."""
    lag = step - 1 - batch.policy_version
    return {"async/policy_version": float(batch.policy_version), "async/version_lag": float(lag),
            "async/dropped_share": float(dropped), "time/generate": batch.seconds}


def start_worker(run: Run) -> RolloutWorker:
    """The rollout worker of an asynchronous run, handed the weights the run starts from (version ``run.start``),
    the training random stream (the checkpoint's, on resume) and the model folder it builds the architecture from.

    Raises:
        ConfigError: several processes (``torchrun``): one worker per learner rank is not implemented.
    """
    if run.dist.grouped:
        raise ConfigError(f"async_rollout.max_staleness={run.config.async_rollout.max_staleness} under torchrun is "
                          "not implemented; launch one process, or set async_rollout.max_staleness: 0")
    resume = ckpt.find_checkpoint(run.result.output_dir, run.config.resume_from_checkpoint) if run.start else None
    model_path = str(resume / "actor") if resume is not None else resolve_model(run.config.pretrain)
    worker = RolloutWorker(run.config, run.start, model_path, run.sampler.state(), run.result.output_dir)
    worker.publish(PlainWeights(run.models.actor_module).state_dict(), version=run.start)
    return worker


def main(config: TrainConfig) -> TrainResult:
    """Run (or resume) one training run as configured; returns the metrics and the first/last evaluations.

    Joins the ``torchrun`` process group if launched by it, and leaves it (destroys it) at the end if it joined it
    here.

    Raises:
        ConfigError: something the config names cannot be used (env kwargs, the process count, a checkpoint);
            :class:`~agentgym_bench.errors.UserError`: no model at ``pretrain``.
    """
    started = time.perf_counter()
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    joined = not torch.distributed.is_initialized()
    dist = init_distributed(config.device, join_single=config.strategy == "fsdp2")
    if config.strategy == "fsdp2" and not dist.grouped:  # said: config.yaml records fsdp2 all the same
        print("strategy fsdp2 in a plain launch: one process, unsharded (torchrun shards it)", file=sys.stderr)
    run, lock = None, ckpt.hold(Path(config.output_dir)) if dist.is_main else None
    try:
        run = start_run(config, dist, started)
        if config.async_rollout.max_staleness > 0:
            run.worker = start_worker(run)
        if run.start == 0:
            with generating(run):
                val, run.result.first_eval = play_validation(run.val_groups, run.sampler, config, dist,
                                                             run.val_seed, run.prompt_fits)
            _write(run, {"step": 0, **val, "time/total": time.perf_counter() - run.t0})
        bar = progress_bar(config.max_steps, "train", "it", enabled=config.progress and dist.is_main,
                           initial=run.start)  # a resumed run's estimate from its own rate
        for step in range(run.start + 1, config.max_steps + 1):
            record = run_iteration(run, step)
            if dist.is_main:
                _warn(run, step)
            bar.set_postfix_str(", ".join(f"{label} success {record[k]:.3f}" for k, label in
                                          (("reward/success", "train"), ("val/success", "validation")) if k in record),
                                refresh=False)  # shown with this iteration counted, by the update
            bar.update(1)
        bar.close()
        if dist.is_main:
            _finish(run)
        if joined:
            shutdown_distributed(together=True)
        return run.result
    finally:
        if run is not None:
            if run.worker is not None:
                run.worker.close()
            run.train_groups.close()
            run.val_groups.close()
        if joined:
            shutdown_distributed()
        if lock is not None:
            lock.close()


def _finish(run: Run) -> None:
    """``curves.png`` and ``summary.json``: validation success before and after with the gain's interval, and each
    validation episode's success (0/1) before and after, in the validation groups' order (the same in every run with
    the same ``val_env_manager``), so two runs can be paired on the same seeds:
    ``success_gain(a["val_episodes"]["after"], b["val_episodes"]["after"])``."""
    out = run.result.output_dir
    plot_metrics(run.result.records, out / run_folder.CURVES, title=_title(run.config))
    first, last = run.result.first_eval, run.result.last_eval
    if first and last:
        run_folder.write_summary(out, {"val": success_gain(first, last),
                                       "val_episodes": {"before": [int(s) for s in first],
                                                        "after": [int(s) for s in last]},
                                       "wall_time_s": time.perf_counter() - run.t0, **run.dist.hardware()})


def _warn(run: Run, step: int) -> None:
    """One line on stderr for each collapse warning that turned on at this iteration (it was off at the one before),
    so a lasting condition is announced once."""
    records = run.result.records
    before = records[-2] if len(records) > 1 else {}
    for key in WARNINGS:
        if records[-1].get(key) and not before.get(key):
            print(f"step {step}: {key}: {run.config.echo_trap.message(key)} (docs/trainers.md, 'The Echo Trap "
                  "warnings'; a lower learning rate is the first thing to try)", file=sys.stderr)


def _write(run: Run, record: dict[str, Any]) -> None:
    run.result.records.append(record)
    if run.log is not None:
        run.log.write(record)


def _title(config: TrainConfig) -> str:
    tags = ", ".join(config.train_env_manager.tags)
    return f"{config.preset or config.adv_estimator} on {tags} (lr {config.learning_rate:g})"
