"""Warm start: supervised fine-tuning on oracle demonstrations.

An instruct model brings RL two things: replies in the right format and some skill. The default model is trained
from scratch, so the warm start gives it both:

1. Demonstrations: :class:`~agentgym_bench.rollout.scripted.NoisyOraclePolicy` plays each env on training seeds
   (from :data:`~agentgym_bench.seeds.TRAIN_SEED_START`): each turn the oracle's reply planned with at most
   ``oracle_actions`` actions, or with probability ``epsilon`` a random valid action (default 0: clean
   demonstrations imitate best, ``docs/lab/2026-11-22-warm-start-ablations.md``, "Where the capacity went"); with
   ``demonstrators``, another demonstrator on some envs (WebShop's first-hit shopper). Every reply is well formed. The
   two-player ``Bargain-v0`` (:data:`MATCH_ENVS`) has a weak demonstrator instead, so that RL has room: matches between
   two uniformly random, well-formed demands (:class:`~agentgym_bench.multiagent.selfplay.RandomBargainPolicy`), both
   seats' turns kept; its evaluation is the win rate against the random policy, seats alternating, next to the scripted
   bargainer's (the "oracle" column) and the random policy's (docs/multiagent.md).
2. Fine-tuning: next-token cross-entropy on the reply tokens only (the loss mask of
   :func:`~agentgym_bench.rollout.tokens.step_token_views`: each turn's prompt under the history window, then the
   reply and its end token; :func:`reply_loss`), AdamW with linear warm-up and cosine decay
   (:func:`trainers.schedule.warm_start_schedule`), shuffled by a seeded
   ``torch.Generator``. (Batches are a plain shuffle of every env's rows: batching rows of similar length, which
   made nearly every batch a single env, kept a five-env model from ever learning to read the board —
   runs 2 and 3 of ``docs/lab/2026-11-22-warm-start-ablations.md``.)
   Training runs inside ``torch.random.fork_rng`` seeded from ``seed``, so a model with dropout is reproducible too
   and the caller's global RNG is left as it was.
3. Evaluation on the validation seeds ``0 .. N-1`` (the benchmark's evaluation seeds, disjoint from training) with
   sampling at ``temperature``: success per env with a 95% Wilson interval, next to the oracle and two random
   policies on the same seeds: one valid action a turn (the random baseline RAGEN reports) and 1..k valid
   actions a turn, k the per-turn limit (``agentgym-bench demo``, ``docs/oracles.md``).

The output folder is an ordinary Hugging Face model folder plus ``warmstart.json``: the settings, the training
loss, the evaluation table, and (``started_from``) the report of each earlier stage when ``model`` was itself
warm-started. Its ``"rollout"`` entry (prompt template, history window, reply budget) is how the
model expects to be prompted. While it trains, ``<output>.warmstart-checkpoint.pt`` beside the folder holds its state
(every :data:`CHECKPOINT_STEPS` steps): a warm start stopped part-way and run again with the same settings continues
from it, to the same model; it is removed when the model is written.

Command line: ``agentgym-bench warmstart`` (see ``--help``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.episodes import Played, play_episodes
from agentgym_bench.paths import expand, model_dir
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.scripted import (
    DEMONSTRATORS,
    NoisyOraclePolicy,
    OraclePolicy,
    RandomPolicy,
    has_demonstrator,
)
from agentgym_bench.rollout.tokens import TokenView
from agentgym_bench.rollout.trajectory import Trajectory
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START, check_seeds_disjoint

DEFAULT_EPISODES = {"AgentSokoban-v0": 180_000, "AgentFrozenLake-v0": 6_000, "AgentFrozenLakeNoSlip-v0": 12_000,
                    "AgentBandit-v0": 1_000}
"""Demonstration episodes per env of the default warm start (run 10 of docs/lab/2026-11-22-warm-start-ablations.md):
one model for the suite's 4x4/6x6 grid envs and Bandit, most of the budget where reading the board is hardest (Sokoban
success grew with every doubling of its demonstrations: 0.44, 0.50, 0.59-0.66, 0.82 at 30, 45, 90, 180 thousand
episodes)."""
DEFAULT_PROCESSES = 2
"""Data-parallel processes of ``agentgym-bench warmstart`` (and of the main job's warm start), one torch thread each,
at most the CPU count: on two idle cores 1.85x one thread and 1.06x two threads of one process; beside one busy
process 1.20x one thread, where two threads fall to 0.62x (benchmarks/warmstart_threads.md). The process and thread
counts change the last bits of the sums, so the same seed on other counts gives another model, as another seed would
(run 7 of docs/lab/2026-11-22-warm-start-ablations.md: Sokoban 0.66 on one thread, 0.59 on two)."""
DEFAULT_ENVS = tuple(DEFAULT_EPISODES)
CHECKPOINT_STEPS = 250
"""Optimiser steps between the warm start's checkpoints (a few minutes of the default model on 2 cores)."""
CHECKPOINT_SUFFIX = ".warmstart-checkpoint.pt"
"""The checkpoint sits beside the output folder, ``<output>.warmstart-checkpoint.pt`` (inside, it would make a
half-trained folder look like a model): a stopped warm start run again continues from it; removed once the model
and ``warmstart.json`` are written."""
DEMONSTRATIONS_SUFFIX = ".warmstart-demonstrations.pt"
"""The demonstrations' training rows sit beside the output folder too, ``<output>.warmstart-demonstrations.pt``, so a
stopped warm start does not play and tokenise them again (:func:`demonstration_rows`); removed with the checkpoint."""
MATCH_ENVS = ("Bargain-v0",)
"""Two-player env ids with a demonstrator: random-demand matches (module docstring)."""


@dataclass
class WarmStartConfig:
    """Settings of a warm start.

    Attributes:
        model: the model to start from (``agentgym_bench.paths.resolve_model``: a folder, a name under
            ``$AGENTGYM_BENCH_HOME/models`` or a hub id); ``"default"`` is built first if missing.
        output: where to write the fine-tuned model and ``warmstart.json`` (``None``:
            ``paths.model_dir("warmstart")``, which ``pretrain: warmstart`` in the training configs reads).
        envs: agent env ids to learn.
        prompt: prompt template of the envs (``"compact"`` for the small model).
        history: history window of the prompts (``0``: the current observation only).
        epsilon: probability that a demonstration turn is a random valid action instead of the oracle's.
        oracle_actions: most actions a demonstration turn of the oracle plans (``None``: the env's per-turn limit).
        demonstrators: env id -> a demonstrator other than the oracle (``{"AgentWebShop-v0": "first-hit"}``: the
            shopper that searches the instruction, opens the first hit, clicks the options the instruction names and
            buys, every action a copy from the page; ``agentgym_bench/envs/webshop/first_hit.py``).
        copy_augment: add this many copy variants of each WebShop demonstration turn whose reply copies from the
            page (search and results pages), as one-turn episodes: the instruction's words or the product codes
            replaced by random ones in the page and the reply, so only copying predicts them
            (``agentgym_bench/envs/webshop/augment.py``; made for ``history`` 0, where a turn's prompt is its page).
        episodes: demonstration episodes per env: one number for every env, or ``{env_id: episodes}`` naming each
            env of ``envs`` (entries of other envs are ignored).
        epochs: passes over the demonstrations.
        batch_size: rows (turns) per optimiser step.
        group_by_length: form each step's rows from rows of similar length (:func:`epoch_batches`), so that less of
            a batch is padding: for envs whose prompts differ in length (WebShop's pages: 110 to ~870 tokens).
        lr: peak learning rate.
        warmup: fraction of the steps with linear warm-up.
        eval_episodes: validation episodes per env (seeds ``0 .. eval_episodes-1``).
        temperature: sampling temperature of the evaluation.
        max_new_tokens: reply budget when generating.
        seed: seeds demonstrations, shuffling, training and evaluation sampling.
    """

    model: str = "default"
    output: str | None = None
    envs: tuple[str, ...] = DEFAULT_ENVS
    prompt: str = "compact"
    history: int | None = 0
    epsilon: float = 0.0
    oracle_actions: int | None = 2
    demonstrators: dict[str, str] = field(default_factory=dict)
    copy_augment: int = 0
    episodes: int | dict[str, int] = field(default_factory=lambda: dict(DEFAULT_EPISODES))
    epochs: int = 1
    batch_size: int = 128
    group_by_length: bool = False
    lr: float = 2e-3
    warmup: float = 0.05
    eval_episodes: int = 500
    temperature: float = 1.0
    max_new_tokens: int = 16
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon={self.epsilon} must be in [0, 1]")
        for name in ("epochs", "batch_size", "eval_episodes", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if self.copy_augment < 0:
            raise ValueError(f"copy_augment={self.copy_augment} must be >= 0")
        if not self.envs:
            raise ValueError("envs must name at least one env id")
        for env_id, name in self.demonstrators.items():
            if env_id not in self.envs or env_id in MATCH_ENVS or not has_demonstrator(env_id, name):
                raise ValueError(f"demonstrators={self.demonstrators}: each must name an env of {list(self.envs)} "
                                 f"and a demonstrator its game has (of {list(DEMONSTRATORS)}; first-hit: WebShop)")
        if isinstance(self.episodes, dict) and not set(self.envs) <= set(self.episodes):
            raise ValueError(f"episodes={self.episodes} must name every env of {list(self.envs)}")
        for env_id in self.envs:
            if self.episodes_of(env_id) < 1:
                raise ValueError(f"episodes={self.episodes} must be >= 1 for every env")
            demonstrations = range(TRAIN_SEED_START, TRAIN_SEED_START + self.episodes_of(env_id))
            check_seeds_disjoint(f"demonstration seeds of {env_id}", demonstrations)
        validation = range(VALIDATION_SEED_START, VALIDATION_SEED_START + self.eval_episodes)
        check_seeds_disjoint("validation seeds", validation)
        check_seeds_disjoint("validation seeds", validation, "the demonstration (training) seeds",
                             range(TRAIN_SEED_START, TRAIN_SEED_START + max(map(self.episodes_of, self.envs))))

    def episodes_of(self, env_id: str) -> int:
        """Demonstration episodes of ``env_id``."""
        return self.episodes[env_id] if isinstance(self.episodes, dict) else self.episodes

    @property
    def all_env_kwargs(self) -> dict[str, Any]:
        return {"prompt": self.prompt, **self.env_kwargs}

    def kwargs_of(self, env_id: str) -> dict[str, Any]:
        """The env's keyword arguments: ``env_kwargs``, plus ``prompt`` for single-agent envs."""
        return dict(self.env_kwargs) if env_id in MATCH_ENVS else self.all_env_kwargs


def collect_demonstrations(config: WarmStartConfig, *, progress: bool = False) -> list[Trajectory]:
    """``config.episodes_of(env_id)`` noisy-oracle episodes of each env on training seeds, in batches of up to 512
    (two-player envs: :func:`match_demonstrations`).

    Each env's episodes use seeds ``TRAIN_SEED_START, TRAIN_SEED_START + 1, ...``; the envs come in ``config.envs``
    order.
    """
    policy = NoisyOraclePolicy(config.epsilon, seed=config.seed, max_oracle_actions=config.oracle_actions,
                               demonstrators=config.demonstrators)
    out: list[Trajectory] = []
    for env_id in config.envs:
        episodes = config.episodes_of(env_id)
        if env_id in MATCH_ENVS:
            out += match_demonstrations(env_id, episodes, config)
            continue
        per_batch = min(episodes, 512)
        groups = EnvGroups([env_id], [per_batch], 1, env_kwargs=config.all_env_kwargs, seed=TRAIN_SEED_START)
        mine: list[Trajectory] = []
        batches = math.ceil(episodes / per_batch)
        with progress_bar(batches, f"demonstrations {env_id}", "batch", enabled=progress) as bar:
            for _ in range(batches):
                mine += groups.rollout(policy, history=config.history)
                bar.update(1)
        groups.close()
        out += mine[:episodes]
    return out


def copy_augmented(trajectories: list[Trajectory], k: int, seed: int) -> list[Trajectory]:
    """One-turn episodes: ``k`` copy variants of each WebShop turn of ``trajectories`` whose reply copies from the
    page (:func:`~agentgym_bench.envs.webshop.augment.copy_variants`, drawn from one generator seeded by
    ``seed``); none for other envs' turns or with ``k`` 0."""
    if k == 0:
        return []
    import numpy as np

    from agentgym_bench.envs.webshop.augment import copy_variants

    rng, out = np.random.default_rng(seed), []
    for t in trajectories:
        for turn in t.turns:
            for observation, reply in copy_variants(turn.observation, turn.reply, k, rng):
                out.append(replace(t, turns=[replace(turn, observation=observation, reply=reply)]))
    return out


def match_demonstrations(env_id: str, matches: int, config: WarmStartConfig) -> list[Trajectory]:
    """Both seats of ``matches`` random-demand matches of a two-player env, seeds ``TRAIN_SEED_START, ...``
    (``2 * matches`` trajectories, match by match, ``player_0`` first)."""
    from agentgym_bench.multiagent.selfplay import RandomBargainPolicy, play_matches

    results = play_matches(env_id, range(TRAIN_SEED_START, TRAIN_SEED_START + matches),
                           RandomBargainPolicy(config.seed), RandomBargainPolicy(config.seed + 1),
                           env_kwargs=config.kwargs_of(env_id), learner_seats="player_0", history=config.history)
    return [t for r in results for t in r.trajectories.values() if t.turns]


def reply_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Mean next-token cross-entropy over the tokens of ``batch["loss_mask"]`` (the replies).

    The output head runs only on the positions that predict a reply token, not on the prompts
    (:func:`~agentgym_bench.rollout.heads.logits_at`): with a vocabulary of thousands of words and replies of a few
    tokens that is most of the head's cost saved. The same value as ``model(...).logits`` followed by a masked mean.

    Args:
        batch: ``input_ids``, ``attention_mask``, ``loss_mask``, each ``(B, T)``.
    """
    import torch

    logits, targets = reply_logits(model, batch)
    return torch.nn.functional.cross_entropy(logits, targets)


def reply_logits(model: Any, batch: dict[str, Any]) -> tuple[Any, Any]:
    """``(logits (M, V) float32, targets (M,))`` of the ``M`` positions that predict a reply token of ``batch``
    (``input_ids``, ``attention_mask``, ``loss_mask``, each ``(B, T)``), the output head run on those only."""
    from agentgym_bench.rollout.heads import logits_at

    predicts = batch["loss_mask"][:, 1:].bool()  # (B, T-1): position t predicts token t+1
    logits = logits_at(model, batch["input_ids"], batch["attention_mask"], predicts)
    return logits.float(), batch["input_ids"][:, 1:][predicts]


def shard_step(model: Any, batch: dict[str, Any] | None) -> float:
    """One data-parallel step's gradients: this process's share of the batch (``batch``; ``None`` if it has no
    rows), the summed cross-entropy of its reply tokens back-propagated, then one ``all_reduce`` of every gradient
    with the loss and the token count, so each process holds the gradient of the whole batch's mean (as
    :func:`reply_loss` on the whole batch, up to the order of the sums). Returns that mean."""
    import torch
    import torch.distributed as dist

    params = [p for p in model.parameters() if p.requires_grad]
    loss_sum, count = torch.zeros(()), torch.zeros(())
    if batch is not None:
        logits, targets = reply_logits(model, batch)
        loss_sum = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
        loss_sum.backward()
        count = torch.tensor(float(len(targets)))
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in params]
                     + [loss_sum.detach().reshape(1), count.reshape(1)])
    dist.all_reduce(flat)
    total = flat[-1].clamp(min=1.0)
    offset = 0
    for p in params:
        p.grad = (flat[offset:offset + p.numel()] / total).view_as(p).to(p.dtype)
        offset += p.numel()
    return float(flat[-2] / total)


def finetune(model: Any, tokenizer: Any, trajectories: list[Trajectory], config: WarmStartConfig, *,
             progress: bool = False, checkpoint: Path | None = None) -> tuple[list[float], float]:
    """Supervised fine-tuning on the replies of ``trajectories`` (in place): :func:`fit` on their training rows."""
    return fit(model, tokenizer, training_rows(trajectories, tokenizer), config, progress=progress,
               checkpoint=checkpoint)


def training_rows(trajectories: list[Trajectory], tokenizer: Any) -> list[TokenView]:
    """One row per turn of each trajectory (:func:`agentgym_bench.rollout.tokens.step_token_views`)."""
    from agentgym_bench.rollout.tokens import step_token_views

    return [v for t in trajectories for v in step_token_views(t, tokenizer)]


def fit(model: Any, tokenizer: Any, views: list[TokenView], config: WarmStartConfig, *,
        progress: bool = False, checkpoint: Path | None = None) -> tuple[list[float], float]:
    """Supervised fine-tuning on the replies of ``views`` (in place). Returns the loss of every step and the
    seconds of fine-tuning spent by earlier runs (0 unless resumed).

    With ``checkpoint`` (a file), the state of training is written there every :data:`CHECKPOINT_STEPS` optimiser
    steps and at the end, and a run started again with the same settings (``config``, demonstrations, torch
    threads) continues from it, bit for bit as if it had not stopped; a checkpoint of other settings is ignored.

    In a process group (:func:`data_parallel`) each of the ``W`` processes takes every ``W``-th row of each batch
    (:func:`shard_step`): the same steps, the batch's gradient shared; process 0 writes the checkpoint."""
    import torch

    from agentgym_bench.rollout.tokens import collate
    from trainers.checkpoint import load_file, save_file
    from trainers.schedule import warm_start_schedule

    rank, world = process_rank()
    steps_per_epoch = math.ceil(len(views) / config.batch_size)
    total = steps_per_epoch * config.epochs
    warmup = max(1, int(config.warmup * total))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warm_start_schedule(warmup, total))
    generator = torch.Generator().manual_seed(config.seed)
    device = next(model.parameters()).device
    key = {"config": asdict(config), "rows": len(views), "threads": torch.get_num_threads(),
           **({"processes": world} if world > 1 else {})}
    saved = load_file(checkpoint, key, "warmstart") if checkpoint is not None else None
    losses: list[float] = []
    earlier, started = 0.0, time.time()
    model.train()
    resumed_steps = len(saved["losses"]) if saved is not None else 0
    with torch.random.fork_rng(devices=[]), progress_bar(total, "fine-tune", "step", enabled=progress,
                                                         initial=resumed_steps) as bar:
        torch.manual_seed(config.seed)
        first_epoch = 0
        if saved is not None:
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            schedule.load_state_dict(saved["schedule"])
            generator.set_state(saved["generator"])
            torch.set_rng_state(saved["torch_rng"])
            losses, first_epoch, earlier = saved["losses"], saved["epoch"], saved["seconds"]
        for epoch in range(first_epoch, config.epochs):
            epoch_start = generator.get_state()  # a checkpoint inside this epoch re-draws its order from here
            batches = epoch_batches([len(v) for v in views], config.batch_size, generator, config.group_by_length)
            for step in range(len(losses) - epoch * steps_per_epoch, steps_per_epoch):
                rows = batches[step][rank::world]
                batch = collate([views[i] for i in rows], tokenizer.pad_token_id) if rows else None
                batch = {k: v.to(device) for k, v in batch.items()} if batch is not None else None
                optimizer.zero_grad(set_to_none=True)
                if world == 1:
                    loss = reply_loss(model, batch)
                    loss.backward()
                    losses.append(float(loss.detach()))
                else:
                    losses.append(shard_step(model, batch))
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                bar.update(1)
                bar.set_postfix_str(f"loss {losses[-1]:.3f}")
                if rank == 0 and checkpoint is not None and (len(losses) % CHECKPOINT_STEPS == 0
                                                             or len(losses) == total):
                    save_file(checkpoint, {
                        "key": key, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(), "generator": epoch_start,
                        "torch_rng": torch.get_rng_state(), "losses": losses, "epoch": epoch,
                        "seconds": earlier + time.time() - started})
    model.eval()
    return losses, earlier


GROUP_BATCHES = 50
"""With ``group_by_length``, rows are sorted by length within groups of this many batches (Hugging Face
``LengthGroupedSampler``'s mega-batches)."""


def epoch_batches(lengths: list[int], batch_size: int, generator: Any, group_by_length: bool) -> list[list[int]]:
    """The row indices of each step of one epoch: a random order of the ``len(lengths)`` rows, cut into batches of
    ``batch_size`` (the last one shorter). With ``group_by_length`` (as Hugging Face's ``LengthGroupedSampler``) the
    order is cut into groups of :data:`GROUP_BATCHES` batches, each group sorted by length (longest first) before it
    is cut, and the batches are then shuffled; the same ``ceil(n / batch_size)`` batches, each row once. Draws from
    ``generator`` (a ``torch.Generator``) only."""
    import torch

    order = torch.randperm(len(lengths), generator=generator).tolist()
    if group_by_length:
        group = batch_size * GROUP_BATCHES
        order = [row for start in range(0, len(order), group)
                 for row in sorted(order[start : start + group], key=lambda r: -lengths[r])]
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    if group_by_length:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def success_table(policy: Any, config: WarmStartConfig, *, history: int | None) -> dict[str, dict[str, float]]:
    """Success of ``policy`` per env on validation seeds ``0 .. eval_episodes-1``, with a 95% Wilson interval, the
    mean episode return and the share of turns whose reply parsed.

    Two-player envs: the win rate against uniformly random demands, seats alternating; the oracle and random
    policies stand for the scripted bargainer and the random demands."""
    single = [e for e in config.envs if e not in MATCH_ENVS]
    trajectories = []
    if single:
        with EnvGroups.validation(single, [config.eval_episodes] * len(single),
                                  env_kwargs=config.all_env_kwargs) as groups:
            trajectories = play_episodes(groups, policy, history=history).trajectories
    for env_id in (e for e in config.envs if e in MATCH_ENVS):
        trajectories += _match_evaluation(env_id, policy, config, history)
    played = Played(trajectories)
    success = played.success
    table = {}
    for env_id in config.envs:
        mine, rate = played.of(env_id), success[env_id]
        table[env_id] = {"success": rate.rate, "ci_low": rate.low, "ci_high": rate.high, "episodes": rate.n,
                         "mean_return": sum(t.episode_reward for t in mine) / max(1, len(mine)),
                         "format_valid": sum(u.info.get("format_valid", False) for t in mine for u in t.turns)
                         / max(1, sum(len(t.turns) for t in mine))}
    return table


def _match_evaluation(env_id: str, policy: Any, config: WarmStartConfig, history: int | None) -> list[Trajectory]:
    from agentgym_bench.multiagent.selfplay import RandomBargainPolicy, ScriptedBargainPolicy, play_matches

    stand_in = {OraclePolicy: ScriptedBargainPolicy, RandomPolicy: lambda: RandomBargainPolicy(config.seed)}
    learner = stand_in[type(policy)]() if type(policy) in stand_in else policy
    results = play_matches(env_id, range(VALIDATION_SEED_START, VALIDATION_SEED_START + config.eval_episodes),
                           learner, RandomBargainPolicy(config.seed + 1), env_kwargs=config.kwargs_of(env_id),
                           history=history)
    return [r.learner_trajectory for r in results]


def warm_start(config: WarmStartConfig, *, progress: bool = False) -> dict[str, Any]:
    """Run the whole warm start; write the model and ``warmstart.json`` to ``config.output``; return the report."""
    import torch

    from agentgym_bench.rollout.hf import HFPolicy, load_model, no_progress_bars

    started = time.time()
    default_model_ready(config)
    model, tokenizer = load_model(config.model)
    earlier = earlier_stage(config.model)  # read before the output is written: it may be the same folder
    output = model_dir("warmstart") if config.output is None else expand(config.output)
    checkpoint = output.with_name(output.name + CHECKPOINT_SUFFIX)
    cache = output.with_name(output.name + DEMONSTRATIONS_SUFFIX)
    rank, world = process_rank()
    if rank > 0:  # process 0 plays and tokenises the demonstrations; the others read its rows
        torch.distributed.barrier()
    views, described = demonstration_rows(config, tokenizer, cache, progress=progress)
    if rank == 0 and world > 1:
        torch.distributed.barrier()
    losses, resumed_seconds = fit(model, tokenizer, views, config, progress=progress, checkpoint=checkpoint)
    if rank > 0:
        return {}
    trained = time.time()
    policy = HFPolicy(model, tokenizer, temperature=config.temperature, max_new_tokens=config.max_new_tokens,
                      seed=config.seed, max_batch_size=256)
    evaluation = {
        "warm_start": success_table(policy, config, history=config.history),
        "oracle": success_table(OraclePolicy(), config, history=config.history),
        "random": success_table(RandomPolicy(config.seed), config, history=config.history),
        "random_one_action": success_table(RandomPolicy(config.seed, max_actions=1), config, history=config.history),
    }
    output.mkdir(parents=True, exist_ok=True)
    with no_progress_bars():
        model.save_pretrained(output)
        tokenizer.save_pretrained(output)
    report = {
        "config": {**asdict(config), "envs": list(config.envs)},
        "rollout": {"prompt": config.prompt, "history": config.history, "max_new_tokens": config.max_new_tokens,
                    "temperature": config.temperature},
        "demonstrations": described,
        "train": {"steps": len(losses), "first_loss": losses[0], "final_loss": sum(losses[-20:]) / len(losses[-20:]),
                  "seconds": round(trained - started + resumed_seconds, 1), "threads": torch.get_num_threads(),
                  **({"processes": world} if world > 1 else {}),
                  **({"resumed": True} if resumed_seconds else {})},
        "evaluation": evaluation,
        "seconds": round(time.time() - started + resumed_seconds, 1),
    }
    if earlier is not None:
        report["started_from"] = earlier
    (output / "warmstart.json").write_text(json.dumps(report, indent=2) + "\n")
    checkpoint.unlink(missing_ok=True)
    cache.unlink(missing_ok=True)
    return report


def default_model_ready(config: WarmStartConfig) -> None:
    """Build the home's default model if ``config`` starts from it and it is not there yet."""
    from trainers.default_model import build_default_model

    if config.model == "default" and not model_dir("default").is_dir():
        build_default_model(model_dir("default"), seed=config.seed)


def process_rank() -> tuple[int, int]:
    """``(rank, world size)`` of this process's ``torch.distributed`` group; ``(0, 1)`` outside one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def data_parallel(config: WarmStartConfig, processes: int, threads: int) -> dict[str, Any]:
    """:func:`warm_start` on ``processes`` processes of ``threads`` torch threads each, data-parallel over gloo on
    this machine (:func:`fit`); returns process 0's report. Two one-thread processes keep two cores busier than one
    two-thread process, above all on cores shared with other work (benchmarks/warmstart_threads.md)."""
    import socket

    import torch.multiprocessing as mp

    from agentgym_bench.errors import UserError
    from agentgym_bench.paths import resolve_model

    default_model_ready(config)  # before the processes start, which would race to build it
    resolve_model(config.model)  # a bad name: one line here, not a traceback from each process
    with socket.socket() as s:  # a free port on the loopback for the group's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reports = mp.get_context("spawn").SimpleQueue()
    try:
        mp.start_processes(_data_parallel_worker, args=(processes, threads, port, config, reports),
                           nprocs=processes, start_method="spawn")
    except mp.ProcessRaisedException as error:  # the process's own error, on one line
        raise UserError(f"warmstart: {str(error).strip().splitlines()[-1]}") from None
    return reports.get()


def _data_parallel_worker(rank: int, processes: int, threads: int, port: int, config: WarmStartConfig,
                          reports: Any) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=processes)
    try:
        report = warm_start(config, progress=rank == 0)
        if rank == 0:
            reports.put(report)
    finally:
        dist.destroy_process_group()


def demonstration_rows(config: WarmStartConfig, tokenizer: Any, cache: Path | None = None, *,
                       progress: bool = False) -> tuple[list[TokenView], dict[str, Any]]:
    """The warm start's training rows (its demonstrations and their copy variants, tokenised) and their
    description for ``warmstart.json`` (episodes, turns, demonstrators' success, copy variants).

    With ``cache`` (a file), rows made with the same ``config`` and tokenizer are read from it, and rows made here
    are written to it: a stopped warm start run again skips the minutes of playing and tokenising."""
    import torch

    from trainers.checkpoint import save_file

    key = {"config": asdict(config), "tokenizer": tokenizer_fingerprint(tokenizer)}
    saved = torch.load(cache, weights_only=False) if cache is not None and cache.is_file() else None
    if saved is not None and saved["key"] == key:
        print(f"warmstart: the demonstrations' rows read from {cache}", file=sys.stderr)
        return unpack_rows(saved["rows"]), saved["described"]
    demonstrations = collect_demonstrations(config, progress=progress)
    variants = copy_augmented(demonstrations, config.copy_augment, config.seed)
    described = {"episodes": len(demonstrations), "turns": sum(len(t.turns) for t in demonstrations),
                 "success": sum(t.success for t in demonstrations) / len(demonstrations),
                 **({"copy_variants": len(variants)} if variants else {})}
    views = training_rows(demonstrations + variants, tokenizer)
    if cache is not None:
        save_file(cache, {"key": key, "rows": pack_rows(views), "described": described})
    return views, described


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's vocabulary, merges and chat template: what turns the same text into other rows."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = (backend.to_str() if backend is not None else repr(sorted(tokenizer.get_vocab().items())))
    return hashlib.sha256((text + str(tokenizer.chat_template)).encode()).hexdigest()


def pack_rows(views: list[TokenView]) -> dict[str, Any]:
    """One-reply rows as flat tensors: ``ids`` (all rows' tokens, int32), per row ``length``, ``reply`` (where its
    reply starts), ``turn`` and ``reward``."""
    import torch

    if any(len(v.spans) != 1 or v.spans[0][1] != len(v) for v in views):
        raise ValueError("pack_rows takes rows of one reply each, at the end of the row")
    return {"ids": torch.tensor([i for v in views for i in v.input_ids], dtype=torch.int32),
            "length": torch.tensor([len(v) for v in views], dtype=torch.int32),
            "reply": torch.tensor([v.spans[0][0] for v in views], dtype=torch.int32),
            "turn": torch.tensor([v.turns[0] for v in views], dtype=torch.int32),
            "reward": torch.tensor([v.rewards[-1] for v in views], dtype=torch.float64)}


def unpack_rows(packed: dict[str, Any]) -> list[TokenView]:
    """The rows :func:`pack_rows` packed, equal to the originals."""
    ids, out, start = packed["ids"].tolist(), [], 0
    for length, reply, turn, reward in zip(packed["length"].tolist(), packed["reply"].tolist(),
                                           packed["turn"].tolist(), packed["reward"].tolist(), strict=True):
        rewards = [0.0] * length
        if reply < length:
            rewards[-1] = reward
        out.append(TokenView(ids[start:start + length], [0] * reply + [1] * (length - reply), rewards,
                             [(reply, length)], [turn]))
        start += length
    return out


def earlier_stage(model: str) -> dict[str, Any] | None:
    """The report of the warm start that made ``model``, if it is a warm-start folder (its ``warmstart.json``
    without the evaluation, with its own ``started_from``): a warm start from a warm-started model is a later stage
    of one recipe (the main job's, ``agentgym-bench baselines``), and its report keeps every stage. ``None`` for any
    other model."""
    from agentgym_bench.paths import resolve_model

    path = expand(resolve_model(model)) / "warmstart.json"
    if not path.is_file():
        return None
    return {k: v for k, v in json.loads(path.read_text()).items() if k != "evaluation"}


def format_report(report: dict[str, Any]) -> str:
    """The evaluation as a Markdown table: success with its interval; for an env whose reward grades an episode
    (WebShop: ``AgentEnvSpec.graded``) also the mean return."""
    from agentgym_bench.registration import is_graded

    lines = ["| env | random, 1 action a turn | random, 1..k actions a turn | warm start | oracle |",
             "|---|---|---|---|---|"]
    evaluation = report["evaluation"]
    for env_id in evaluation["oracle"]:
        graded = is_graded(env_id)
        cells = [f"{r['success']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                 + (f", return {r['mean_return']:.3f}" if graded and "mean_return" in r else "")
                 for r in (evaluation[k][env_id] for k in ("random_one_action", "random", "warm_start", "oracle"))]
        lines.append(f"| {env_id} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- command line ------------------------------------------------------------------------------------------------


def configure_parser(parser: argparse.ArgumentParser) -> None:
    d = WarmStartConfig()
    parser.add_argument("--model", default=d.model, help="model folder, name under $AGENTGYM_BENCH_HOME/models or hub "
                        "id to start from; the default model is built if missing (default: %(default)s)")
    parser.add_argument("--output", default=d.output, help="folder for the fine-tuned model (default: "
                        f"$AGENTGYM_BENCH_HOME/models/warmstart, now {model_dir('warmstart')}); a run stopped "
                        f"part-way and started again continues from OUTPUT{CHECKPOINT_SUFFIX}")
    parser.add_argument("--envs", nargs="+", default=list(d.envs), help="agent env ids (default: %(default)s)")
    parser.add_argument("--prompt", default=d.prompt, help="prompt template, compact or ragen (default: %(default)s)")
    parser.add_argument("--history", type=int, default=d.history,
                        help="history window in turns; -1 for the full conversation (default: %(default)s)")
    parser.add_argument("--epsilon", type=float, default=d.epsilon,
                        help="probability of a random-action turn in the demonstrations (default: %(default)s)")
    parser.add_argument("--oracle-actions", type=int, default=d.oracle_actions,
                        help="most actions a demonstration turn of the oracle plans; 0 for the env's per-turn limit "
                        "(default: %(default)s)")
    parser.add_argument("--demonstrator", action="append", default=[], metavar="ENV=NAME",
                        help="follow another demonstrator than the oracle on ENV (repeatable); "
                        "AgentWebShop-v0=first-hit: search the instruction, open the first hit, click the options the "
                        "instruction names, buy (each action a copy of a string on the page)")
    parser.add_argument("--copy-augment", type=int, default=d.copy_augment, metavar="K",
                        help="add K copy variants of each WebShop search and results turn: the instruction's words or "
                        "the product codes replaced by random ones in the page and the reply, so only copying "
                        "predicts them (default: %(default)s)")
    parser.add_argument("--episodes", nargs="+", default=[f"{k}={v}" for k, v in d.episodes.items()],
                        metavar="N|ENV=N",
                        help="demonstration episodes: one number for every env, or ENV=N for each env "
                        "(default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=d.epochs, help="passes over the demonstrations "
                        "(default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=d.batch_size, help="turns per step (default: %(default)s)")
    parser.add_argument("--group-by-length", action="store_true",
                        help="make each step of rows of similar length (less padding: faster on envs whose prompts "
                        "differ in length, such as WebShop's pages; another order, so another model)")
    parser.add_argument("--lr", type=float, default=d.lr, help="peak learning rate (default: %(default)s)")
    parser.add_argument("--eval-episodes", type=int, default=d.eval_episodes,
                        help="validation episodes per env, seeds 0..N-1 (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=d.temperature,
                        help="sampling temperature of the evaluation (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                        help="reply budget in tokens (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of everything (default: %(default)s)")
    parser.add_argument("--processes", type=int, default=min(DEFAULT_PROCESSES, os.cpu_count() or 1),
                        help="data-parallel processes on this machine (gloo), each on --threads threads: the way to "
                        "use several cores, faster than threads above all on cores shared with other work; another "
                        "process count gives another model (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads of each process; another thread count gives another model "
                        "(default: %(default)s)")


def parse_episodes(values: list[str], envs: list[str]) -> int | dict[str, int]:
    """``["3000"]`` -> ``3000``; ``["AgentSokoban-v0=30000", ...]`` -> ``{"AgentSokoban-v0": 30000, ...}``.

    Raises:
        UserError: anything else (not a number, an env of ``envs`` missing, an env named twice).
    """
    from agentgym_bench.errors import UserError

    try:
        if len(values) == 1 and "=" not in values[0]:
            return int(values[0])
        pairs = [v.split("=", 1) for v in values]
        out = {env_id: int(n) for env_id, n in pairs}
    except ValueError:
        raise UserError(f"--episodes {' '.join(values)}: give one number, or ENV=N for each env") from None
    if len(out) != len(pairs) or not set(envs) <= set(out):
        raise UserError(f"--episodes {' '.join(values)}: name each env of --envs ({' '.join(envs)}) once")
    return out


def parse_demonstrators(values: list[str], envs: list[str]) -> dict[str, str]:
    """``["AgentWebShop-v0=first-hit"]`` -> ``{"AgentWebShop-v0": "first-hit"}``.

    Raises:
        UserError: not ``ENV=NAME``, an env not in ``envs`` or named twice, or an unknown demonstrator.
    """
    from agentgym_bench.errors import UserError

    out: dict[str, str] = {}
    for value in values:
        env_id, _, name = value.partition("=")
        if not name or env_id in out or env_id not in envs or not has_demonstrator(env_id, name):
            raise UserError(f"--demonstrator {value}: give ENV=NAME once per env, ENV one of --envs "
                            f"({' '.join(envs)}), NAME a demonstrator of its game ({', '.join(DEMONSTRATORS)}; "
                            "first-hit: WebShop only)")
        out[env_id] = name
    return out


def run(args: argparse.Namespace) -> int:
    import torch

    from agentgym_bench.errors import UserError

    for name in ("threads", "processes"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name} {getattr(args, name)} must be >= 1")
    demonstrators = parse_demonstrators(args.demonstrator, args.envs)
    episodes = parse_episodes(args.episodes, args.envs)
    try:
        config = WarmStartConfig(
            model=args.model, output=args.output, envs=tuple(args.envs), prompt=args.prompt,
            history=None if args.history < 0 else args.history, epsilon=args.epsilon,
            oracle_actions=args.oracle_actions or None, demonstrators=demonstrators,
            copy_augment=args.copy_augment, episodes=episodes, epochs=args.epochs, batch_size=args.batch_size,
            group_by_length=args.group_by_length, lr=args.lr, eval_episodes=args.eval_episodes,
            temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed)
    except ValueError as e:  # a bad argument: one line, not a traceback
        raise UserError(f"warmstart: {e}") from None
    torch.set_num_threads(args.threads)  # after every check: a refused command changes nothing
    report = data_parallel(config, args.processes, args.threads) if args.processes > 1 else warm_start(
        config, progress=True)
    print(format_report(report))
    output = model_dir("warmstart") if config.output is None else expand(config.output)
    print(f"wrote {output} in {report['seconds']:.0f} s (loss {report['train']['first_loss']:.3f} -> "
          f"{report['train']['final_loss']:.3f})")
    return 0
