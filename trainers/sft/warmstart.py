"""The warm start: supervised fine-tuning (SFT) on oracle demonstrations, the second trainer of ``trainers/``.

An instruct model brings RL two things: replies in the right format and some skill. The default model is trained
from scratch, so the warm start gives it both. One run (one stage of a recipe) is configured by an
:class:`~trainers.sft.sft_config.SFTConfig` (``agentgym-bench warmstart [CONFIG] [key=value ...]``,
:mod:`trainers.cli`; the stages of the published checkpoint's recipe are ``trainers/configs/warmstart-*.yaml``) and
reads top to bottom:

1. Demonstrations: :class:`~agentgym_bench.rollout.scripted.NoisyOraclePolicy` plays each env on training seeds
   (from :data:`~agentgym_bench.seeds.TRAIN_SEED_START`): each turn the oracle's reply planned with at most
   ``oracle_actions`` actions, or with probability ``epsilon`` a random valid action (default 0: clean
   demonstrations imitate best, ``docs/lab/2026-11-22-warm-start-ablations.md``, "Where the capacity went"); with
   ``demonstrators``, another demonstrator on some envs (WebShop's first-hit shopper). Every reply is well formed. The
   two-player Bargain (:data:`~trainers.sft.sft_config.MATCH_ENVS`) has a weak demonstrator instead, so that RL
   has room: matches between two uniformly random, well-formed demands
   (:class:`~agentgym_bench.multiagent.selfplay.RandomBargainPolicy`), both seats' turns kept; its evaluation is the
   win rate against the random policy, seats alternating, next to the scripted bargainer's (the "oracle" column) and
   the random policy's (docs/multiagent.md).
2. Fine-tuning: next-token cross-entropy on the reply tokens only (the loss mask of
   :func:`~agentgym_bench.rollout.tokens.step_token_views`: each turn's prompt under the history window, then the
   reply and its end token; :func:`reply_loss`), AdamW with linear warm-up and cosine decay
   (:func:`trainers.runtime.schedule.warm_start_schedule`), shuffled by a seeded
   ``torch.Generator``. (Batches are a plain shuffle of every env's rows: batching rows of similar length, which
   made nearly every batch a single env, kept a five-env model from ever learning to read the board —
   runs 2 and 3 of ``docs/lab/2026-11-22-warm-start-ablations.md``.)
   Training runs inside ``torch.random.fork_rng`` seeded from ``seed``, so a model with dropout is reproducible too and
   the caller's global RNG is left as it was. With ``processes`` above 1 (:mod:`trainers.runtime.launch`, the launch
   rule of both trainers) each process takes every ``W``-th row of each batch and the gradients are summed over gloo
   (:func:`shard_step`).
3. Evaluation on the validation seeds ``0 .. N-1`` (the benchmark's evaluation seeds, disjoint from training) with
   sampling at ``temperature``: success per env with a 95% Wilson interval, next to the oracle and two random
   policies on the same seeds: one valid action a turn (the random baseline RAGEN reports) and 1..k valid
   actions a turn, k the per-turn limit (``agentgym-bench demo``, ``docs/oracles.md``).

``output`` is a run folder like RL's (:mod:`agentgym_bench.run_folder`): while it trains it holds ``config.yaml``,
``metrics.jsonl`` (a line per optimiser step: ``loss/sft``, ``loss/lr``, ``loss/grad_norm``; then the evaluation's
``val/success`` and ``val/<env>/success``), ``checkpoint-N/`` (:func:`trainers.runtime.checkpoint.save_sft`, every
``save_steps`` steps and after the last: a warm start stopped part-way and run again with the same settings continues
from it, to the same model) and ``demonstrations.pt`` (the demonstrations' rows, so a stopped run does not play and
tokenise them again). When it is done, the folder is an ordinary Hugging Face model folder plus ``warmstart.json``:
the settings, the training loss, the evaluation table, and (``started_from``) the report of each earlier stage when
``model`` was itself warm-started; its ``"rollout"`` entry (prompt template, history window, reply budget) is how the
model expects to be prompted. The checkpoints and the rows are removed then; ``config.yaml`` and ``metrics.jsonl``
stay.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch  # noqa: TID253 - trainers/ runs on torch
import torch.distributed as dist  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench import run_folder
from agentgym_bench.benchmark.episodes import Played, play_episodes
from agentgym_bench.envs.webshop.augment import copy_variants
from agentgym_bench.files import move_into, write_atomic
from agentgym_bench.multiagent.selfplay import RandomBargainPolicy, ScriptedBargainPolicy, play_matches
from agentgym_bench.paths import expand, model_dir, resolve_model
from agentgym_bench.progress import progress as progress_bar
from agentgym_bench.registration import is_graded
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.heads import logits_at
from agentgym_bench.rollout.hf import HFPolicy, load_model, no_progress_bars
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy, RandomPolicy
from agentgym_bench.rollout.tokens import TokenView, collate, step_views, unknown_words, unknown_words_note
from agentgym_bench.rollout.trajectory import Trajectory
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START
from trainers.runtime import checkpoint as ckpt
from trainers.runtime import compute_dtype
from trainers.runtime.config_loading import ConfigError
from trainers.runtime.distributed import Dist
from trainers.runtime.metrics import MetricsLog
from trainers.runtime.schedule import warm_start_schedule
from trainers.sft.default_model import build_default_model
from trainers.sft.sft_config import MATCH_ENVS, SFTConfig

DEMONSTRATIONS = "demonstrations.pt"
"""The demonstrations' training rows in the run folder (:func:`demonstration_rows`); removed with the checkpoints."""


def collect_demonstrations(config: SFTConfig, *, progress: bool = False) -> list[Trajectory]:
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

    rng, out = np.random.default_rng(seed), []
    for t in trajectories:
        for turn in t.turns:
            for observation, reply in copy_variants(turn.observation, turn.reply, k, rng):
                out.append(replace(t, turns=[replace(turn, observation=observation, reply=reply)]))
    return out


def match_demonstrations(env_id: str, matches: int, config: SFTConfig) -> list[Trajectory]:
    """Both seats of ``matches`` random-demand matches of a two-player env, seeds ``TRAIN_SEED_START, ...``
    (``2 * matches`` trajectories, match by match, ``player_0`` first)."""
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
    logits, targets = reply_logits(model, batch)
    return torch.nn.functional.cross_entropy(logits, targets)


def reply_logits(model: Any, batch: dict[str, Any]) -> tuple[Any, Any]:
    """``(logits (M, V) float32, targets (M,))`` of the ``M`` positions that predict a reply token of ``batch``
    (``input_ids``, ``attention_mask``, ``loss_mask``, each ``(B, T)``), the output head run on those only."""
    predicts = batch["loss_mask"][:, 1:].bool()  # (B, T-1): position t predicts token t+1
    logits = logits_at(model, batch["input_ids"], batch["attention_mask"], predicts)
    return logits.float(), batch["input_ids"][:, 1:][predicts]


def shard_step(model: Any, batch: dict[str, Any] | None, dtype: str = "float32") -> float:
    """One data-parallel step's gradients: this process's share of the batch (``batch``; ``None`` if it has no
    rows), the summed cross-entropy of its reply tokens back-propagated, then one ``all_reduce`` of every gradient
    with the loss and the token count, so each process holds the gradient of the whole batch's mean (as
    :func:`reply_loss` on the whole batch, up to the order of the sums). Returns that mean. The forward pass runs in
    ``dtype`` (:func:`trainers.runtime.compute_dtype.autocast`)."""
    params = [p for p in model.parameters() if p.requires_grad]
    loss_sum, count = torch.zeros(()), torch.zeros(())
    if batch is not None:
        with compute_dtype.autocast(dtype, batch["input_ids"].device):
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


def finetune(model: Any, tokenizer: Any, trajectories: list[Trajectory], config: SFTConfig, *,
             progress: bool = False, run: Path | None = None) -> tuple[list[float], float]:
    """Supervised fine-tuning on the replies of ``trajectories`` (in place): :func:`fit` on their training rows."""
    return fit(model, tokenizer, training_rows(trajectories, tokenizer), config, progress=progress, run=run)


def training_rows(trajectories: list[Trajectory], tokenizer: Any) -> list[TokenView]:
    """One row per turn of each trajectory (:func:`agentgym_bench.rollout.tokens.step_views`)."""
    return step_views(trajectories, tokenizer)


def fit(model: Any, tokenizer: Any, views: list[TokenView], config: SFTConfig, *,
        progress: bool = False, run: Path | None = None) -> tuple[list[float], float]:
    """Supervised fine-tuning on the replies of ``views`` (in place). Returns the loss of every step and the
    seconds of fine-tuning spent by earlier runs (0 unless resumed).

    With ``run`` (the run folder), process 0 writes a line per optimiser step to its ``metrics.jsonl`` and a
    ``checkpoint-N/`` every ``config.save_steps`` steps and after the last
    (:func:`trainers.runtime.checkpoint.save_sft`); a run started again with the same settings (``config``,
    demonstrations, torch threads and processes) continues from its last checkpoint, bit for bit as if it had not
    stopped; checkpoints of other settings are removed. ``config.dtype`` ``auto`` is resolved here, after the
    checkpoint is found (:func:`trainers.runtime.compute_dtype.resolve`; recorded in ``run``).

    In a process group (:mod:`trainers.runtime.launch`) each of the ``W`` processes takes every ``W``-th row of each
    batch (:func:`shard_step`): the same steps, the batch's gradient shared."""
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
    resumed = ckpt.load_sft(run, key, "warmstart" if rank == 0 else None) if run is not None else None
    if run is not None and resumed is None:
        if world > 1:
            dist.barrier()  # every process has read the checkpoint it does not take up
        if rank == 0:
            ckpt.remove_checkpoints(run)
    dtype = compute_dtype.resolve(config.dtype, device, run, model, is_main=rank == 0, resumed=resumed is not None,
                                  share=lambda record: Dist(rank, world, device).gather(record)[0])
    log = None
    if run is not None and rank == 0:
        log = MetricsLog(run / run_folder.METRICS, resume_step=len(resumed[1]["losses"]) if resumed else None)
    losses: list[float] = []
    earlier, started = 0.0, time.time()
    model.train()
    with torch.random.fork_rng(devices=[]), progress_bar(total, "fine-tune", "step", enabled=progress,
                                                         initial=len(resumed[1]["losses"]) if resumed else 0) as bar:
        torch.manual_seed(config.seed)
        first_epoch = 0
        if resumed is not None:
            folder, saved = resumed
            model.load_state_dict(load_model(str(folder / run_folder.ACTOR))[0].state_dict())
            optimizer.load_state_dict(saved["optimizer"])
            schedule.load_state_dict(saved["schedule"])
            generator.set_state(saved["generator"])
            torch.set_rng_state(saved["torch_rng"])
            losses, first_epoch, earlier = saved["losses"], saved["epoch"], saved["seconds"]
        for epoch in range(first_epoch, config.epochs):
            epoch_start = generator.get_state()  # a checkpoint inside this epoch re-draws its order from here
            batches = epoch_batches([len(v) for v in views], config.batch_size, generator, config.group_by_length)
            for step in range(len(losses) - epoch * steps_per_epoch, steps_per_epoch):
                loss, norm, lr = train_step(model, optimizer, schedule, [views[i] for i in batches[step][rank::world]],
                                            tokenizer.pad_token_id, device, world, dtype)
                losses.append(loss)
                bar.update(1)
                bar.set_postfix_str(f"loss {loss:.3f}")
                if log is not None:
                    log.write({"step": len(losses), "epoch": epoch, "loss/sft": loss, "loss/lr": lr,
                               "loss/grad_norm": norm})
                if log is not None and (len(losses) % config.save_steps == 0 or len(losses) == total):
                    with no_progress_bars():
                        ckpt.save_sft(run, len(losses), model, tokenizer, config, {
                            "key": key, "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                            "generator": epoch_start, "torch_rng": torch.get_rng_state(), "losses": losses,
                            "epoch": epoch, "seconds": earlier + time.time() - started})
    model.eval()
    return losses, earlier


def train_step(model: Any, optimizer: Any, schedule: Any, rows: list[TokenView], pad_id: int, device: Any,
               world: int, dtype: str = "float32") -> tuple[float, float, float]:
    """One optimiser step on ``rows``, this process's share of the batch (none: it has no rows): the reply loss's
    gradient (shared over the ``world`` processes, :func:`shard_step`), its forward pass in ``dtype``, clipped to
    norm 1, AdamW, the schedule's step. Returns the batch's loss, the gradient norm before clipping and the learning
    rate of the step."""
    batch = {k: v.to(device) for k, v in collate(rows, pad_id).items()} if rows else None
    optimizer.zero_grad(set_to_none=True)
    if world == 1:
        with compute_dtype.autocast(dtype, device):
            loss = reply_loss(model, batch)
        loss.backward()
        value = float(loss.detach())
    else:
        value = shard_step(model, batch, dtype)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    lr = schedule.get_last_lr()[0]
    optimizer.step()
    schedule.step()
    return value, float(norm), lr


GROUP_BATCHES = 50
"""With ``group_by_length``, rows are sorted by length within groups of this many batches (Hugging Face
``LengthGroupedSampler``'s mega-batches)."""


def epoch_batches(lengths: list[int], batch_size: int, generator: Any, group_by_length: bool) -> list[list[int]]:
    """The row indices of each step of one epoch: a random order of the ``len(lengths)`` rows, cut into batches of
    ``batch_size`` (the last one shorter). With ``group_by_length`` (as Hugging Face's ``LengthGroupedSampler``) the
    order is cut into groups of :data:`GROUP_BATCHES` batches, each group sorted by length (longest first) before it
    is cut, and the batches are then shuffled; the same ``ceil(n / batch_size)`` batches, each row once. Draws from
    ``generator`` (a ``torch.Generator``) only."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    if group_by_length:
        group = batch_size * GROUP_BATCHES
        order = [row for start in range(0, len(order), group)
                 for row in sorted(order[start : start + group], key=lambda r: -lengths[r])]
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    if group_by_length:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def success_table(policy: Any, config: SFTConfig, *, history: int | None) -> dict[str, dict[str, float]]:
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


def _match_evaluation(env_id: str, policy: Any, config: SFTConfig, history: int | None) -> list[Trajectory]:
    stand_in = {OraclePolicy: ScriptedBargainPolicy, RandomPolicy: lambda: RandomBargainPolicy(config.seed)}
    learner = stand_in[type(policy)]() if type(policy) in stand_in else policy
    results = play_matches(env_id, range(VALIDATION_SEED_START, VALIDATION_SEED_START + config.eval_episodes),
                           learner, RandomBargainPolicy(config.seed + 1), env_kwargs=config.kwargs_of(env_id),
                           history=history)
    return [r.learner_trajectory for r in results]


def warm_start(config: SFTConfig, *, progress: bool = False) -> dict[str, Any]:
    """Run the whole warm start in its run folder (:func:`output_folder`; module docstring): demonstrations,
    fine-tuning, evaluation, then the model and ``warmstart.json``. Returns the report (``{}`` on processes other
    than process 0)."""
    started = time.time()
    rank, world = process_rank()
    if rank == 0:
        default_model_ready(config)
    if world > 1:
        dist.barrier()
    model, tokenizer = load_model(config.model)
    earlier = earlier_stage(config.model)  # read before the output is written: it may be the same folder
    output = output_folder(config)
    if rank == 0:
        output.mkdir(parents=True, exist_ok=True)
        config.save(output / run_folder.CONFIG)
    else:  # process 0 plays and tokenises the demonstrations; the others read its rows
        dist.barrier()
    views, described = demonstration_rows(config, tokenizer, output / DEMONSTRATIONS, progress=progress)
    check_rows_fit(views, model, config)
    if rank == 0 and world > 1:
        dist.barrier()
    losses, resumed_seconds = fit(model, tokenizer, views, config, progress=progress, run=output)
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
    log = MetricsLog(output / run_folder.METRICS, resume_step=len(losses))
    if not any("val/success" in r and r["step"] == len(losses) for r in log.history()):  # a rerun after a kill
        log.write(validation_record(len(losses), evaluation["warm_start"]))
    staged = output / ".model-new"  # written whole, then moved over the old files: `output` may be `model`'s folder
    shutil.rmtree(staged, ignore_errors=True)
    with no_progress_bars():
        model.save_pretrained(staged)
        tokenizer.save_pretrained(staged)
    move_into(staged, output)
    report = {
        "config": config.to_dict(),
        "rollout": {"prompt": config.prompt, "history": config.history, "max_new_tokens": config.max_new_tokens,
                    "temperature": config.temperature},
        "demonstrations": described,
        "train": {"steps": len(losses), "first_loss": losses[0], "final_loss": sum(losses[-20:]) / len(losses[-20:]),
                  "seconds": round(trained - started + resumed_seconds, 1), "threads": torch.get_num_threads(),
                  "dtype": compute_dtype.recorded(output) if config.dtype == "auto" else config.dtype,
                  **({"processes": world} if world > 1 else {}),
                  **({"resumed": True} if resumed_seconds else {})},
        "evaluation": evaluation,
        "seconds": round(time.time() - started + resumed_seconds, 1),
    }
    if earlier is not None:
        report["started_from"] = earlier
    write_atomic(output / "warmstart.json", (json.dumps(report, indent=2) + "\n").encode())
    ckpt.remove_checkpoints(output)
    (output / DEMONSTRATIONS).unlink(missing_ok=True)
    return report


def check_rows_fit(views: list[TokenView], model: Any, config: SFTConfig) -> None:
    """A :class:`ConfigError` before fine-tuning where a demonstration row (a prompt and its reply), or a prompt and
    the evaluation's ``max_new_tokens``, outgrows the model's positions: a GPT-2 model fails inside its position
    table there, a rotary one trains past what it was built for and fails at evaluation."""
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is None or not views:
        return
    row = max(len(v) for v in views)
    prompt = max(v.spans[-1][0] for v in views)
    if row > positions or prompt + config.max_new_tokens > positions:
        raise ConfigError(f"the demonstrations' longest row is {row} tokens and their longest prompt {prompt} "
                          f"(+ max_new_tokens={config.max_new_tokens} to reply at evaluation); the model has "
                          f"{positions} positions: set prompt=compact or history=0, lower max_new_tokens, or start "
                          "from a model with more positions")


def main(config: SFTConfig) -> dict[str, Any]:
    """The warm start as one process of a launch (:func:`trainers.runtime.launch.launch`, ``agentgym-bench
    warmstart``): :func:`warm_start` with a progress bar on process 0."""
    return warm_start(config, progress=process_rank()[0] == 0)


def output_folder(config: SFTConfig) -> Path:
    """The run folder, which ends as the model: ``config.output``, or ``$AGENTGYM_BENCH_HOME/models/warmstart``."""
    return model_dir("warmstart") if config.output is None else expand(config.output)


def validation_record(step: int, table: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The evaluation's line of ``metrics.jsonl``: ``val/success`` over every validation episode and
    ``val/<env>/success`` per env (as RL's)."""
    episodes = sum(row["episodes"] for row in table.values())
    return {"step": step, "val/success": sum(row["success"] * row["episodes"] for row in table.values()) / episodes,
            **{f"val/{env_id}/success": row["success"] for env_id, row in table.items()}}


def default_model_ready(config: SFTConfig) -> None:
    """Build the home's default model if ``config`` starts from it and it is not there yet."""
    if config.model == "default" and not model_dir("default").is_dir():
        build_default_model(model_dir("default"), seed=config.seed)


def process_rank() -> tuple[int, int]:
    """``(rank, world size)`` of this process's ``torch.distributed`` group; ``(0, 1)`` outside one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def demonstration_rows(config: SFTConfig, tokenizer: Any, cache: Path | None = None, *,
                       progress: bool = False) -> tuple[list[TokenView], dict[str, Any]]:
    """The warm start's training rows (its demonstrations and their copy variants, tokenised) and their
    description for ``warmstart.json`` (episodes, turns, demonstrators' success, copy variants).

    With ``cache`` (a file), rows made with the same ``config`` and tokenizer are read from it, and rows made here
    are written to it: a stopped warm start run again skips the minutes of playing and tokenising."""
    key = {"config": asdict(config), "tokenizer": tokenizer_fingerprint(tokenizer)}
    saved = torch.load(cache, weights_only=False) if cache is not None and cache.is_file() else None
    if saved is not None and saved["key"] == key:
        print(f"warmstart: the demonstrations' rows read from {cache}", file=sys.stderr)
        return unpack_rows(saved["rows"]), saved["described"]
    demonstrations = collect_demonstrations(config, progress=progress)
    unknown = unknown_words(tokenizer, [turn.reply for d in demonstrations for turn in d.turns])
    if unknown:
        print("warmstart: " + unknown_words_note("the demonstrations' replies", unknown, tokenizer), file=sys.stderr)
    variants = copy_augmented(demonstrations, config.copy_augment, config.seed)
    described = {"episodes": len(demonstrations), "turns": sum(len(t.turns) for t in demonstrations),
                 "success": sum(t.success for t in demonstrations) / len(demonstrations),
                 **({"copy_variants": len(variants)} if variants else {})}
    views = training_rows(demonstrations + variants, tokenizer)
    if cache is not None:
        ckpt.save_file(cache, {"key": key, "rows": pack_rows(views), "described": described})
    return views, described


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's vocabulary, merges and chat template: what turns the same text into other rows."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = (backend.to_str() if backend is not None else repr(sorted(tokenizer.get_vocab().items())))
    return hashlib.sha256((text + str(tokenizer.chat_template)).encode()).hexdigest()


def pack_rows(views: list[TokenView]) -> dict[str, Any]:
    """One-reply rows as flat tensors: ``ids`` (all rows' tokens, int32), per row ``length``, ``reply`` (where its
    reply starts), ``turn`` and ``reward``."""
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
    path = expand(resolve_model(model)) / "warmstart.json"
    if not path.is_file():
        return None
    return {k: v for k, v in json.loads(path.read_text()).items() if k != "evaluation"}


def format_report(report: dict[str, Any]) -> str:
    """The evaluation as a Markdown table: success with its interval; for an env whose reward grades an episode
    (WebShop: ``AgentEnvSpec.graded``) also the mean return."""
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
