"""Rollout side of the loop: the generation backends, playing and evaluating episodes (the env groups, their
seeds and each rank's share are the rollout engine's, :class:`agentgym_bench.rollout.engine.EnvGroups`).

- :class:`Sampler`: ``hf`` (the actor itself samples) or ``vllm`` (an engine fed the actor's weights after each
  update), with a training stream that checkpoints and an evaluation stream reseeded every evaluation.
- :func:`make_env_groups`: a process's share of an env manager's groups, as the loop and the rollout worker build
  them.
- :func:`prompt_fits`: the length cap (``sequence_length``) as the engine's per-turn check.
- :func:`play` / :func:`play_validation`: roll out and gather every rank's trajectories
  (:func:`agentgym_bench.benchmark.episodes.play_episodes`, which the warm start and ``demo`` play through too);
  :func:`rollout_metrics`. The groups are ``EnvGroups`` or, for an env manager with an ``opponent``, two-player matches
  (:class:`trainers.rl.matches.MatchGroups`, the same ``rollout`` interface).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.benchmark.episodes import Played, play_episodes
from agentgym_bench.rollout.engine import EnvGroups, even_partition
from agentgym_bench.rollout.hf import HFPolicy, PromptTooLong
from agentgym_bench.rollout.tokens import TokenInTokenOut, encode, render
from agentgym_bench.rollout.trajectory import Trajectory
from agentgym_bench.rollout.vllm_backend import VLLMPolicy
from trainers.rl.config import ConfigError, EnvManager, TrainConfig
from trainers.rl.matches import MatchGroups
from trainers.runtime.distributed import Dist, autocast


def seed_from(seed: int, *words: int) -> int:
    """A 32-bit seed derived from the run's ``seed`` and a purpose (``words``), so each stream is independent."""
    return int(np.random.SeedSequence([seed, *words]).generate_state(1)[0])


class Sampler:
    """The generation backends of a run: ``hf`` samples with the actor itself; ``vllm`` runs a colocated engine that
    gets the actor's weights after every update (:meth:`sync`) and, with ``vllm_sleep_mode``, frees its memory while
    the trainer updates (:meth:`release`). Training and evaluation differ in temperature and in their random streams:
    the training stream is part of the checkpoint, evaluation is reseeded every time.

    With vLLM and whole-episode rows, training rollouts are token-in-token-out
    (:class:`~agentgym_bench.rollout.tokens.TokenInTokenOut`, ``TrainConfig.token_in_token_out``): prompts are the
    previous prompt's ids, the sampled reply's ids and the new observation segment, never a re-rendered chat, so
    templates that rewrite history (Qwen3) train on exactly what the model read.
    Generation never runs under the trainer's autocast: ``hf`` uses :meth:`generation_context`, vLLM its own dtype.
    """

    def __init__(self, config: TrainConfig, actor: torch.nn.Module, tokenizer: Any, dist: Dist,
                 model_path: str):
        self.config, self.dist = config, dist
        seed = seed_from(config.seed, 2, dist.rank)
        if config.generation_backend == "vllm":
            self.engine = VLLMPolicy(model_path, temperature=config.temperature, top_p=config.top_p,
                                     max_new_tokens=config.max_new_tokens, seed=seed,
                                     gpu_memory_utilization=config.vllm_gpu_memory_utilization,
                                     sleep_mode=config.vllm_sleep_mode,
                                     dtype="bfloat16" if config.dtype == "bfloat16" else "float32")
            self.train_backend = self.val_backend = self.engine
        else:
            self.engine = None
            self.train_backend = HFPolicy(actor, tokenizer, temperature=config.temperature,
                                          top_p=config.top_p, max_new_tokens=config.max_new_tokens, seed=seed,
                                          max_batch_size=config.generation_batch_size)
            self.val_backend = HFPolicy(actor, tokenizer, temperature=config.val_temperature,
                                        max_new_tokens=config.max_new_tokens,
                                        max_batch_size=config.generation_batch_size)
        self.train = self.train_backend
        if config.token_in_token_out:
            self.train = TokenInTokenOut(self.train_backend, tokenizer)
        self.val = self.val_backend

    @property
    def is_vllm(self) -> bool:
        return self.engine is not None

    def state(self) -> Any:
        """The training stream's position (a torch Generator state, or vLLM's request counter)."""
        return self.engine.requests_made if self.is_vllm else self.train_backend.generator.get_state()

    def load_state(self, state: Any) -> None:
        if self.is_vllm:
            self.engine.requests_made = state
        else:
            self.train_backend.generator.set_state(state)

    def generation_context(self) -> contextlib.AbstractContextManager:
        """bfloat16 autocast for the ``hf`` backend (the actor generates); nothing for vLLM."""
        return contextlib.nullcontext() if self.is_vllm else autocast(self.config, self.dist)

    def release(self) -> None:
        """Before the update: let the vLLM engine free its GPU memory (``vllm_sleep_mode``)."""
        if self.is_vllm:
            self.engine.sleep()

    def sync(self, actor: torch.nn.Module) -> None:
        """Push the actor's new weights into the vLLM engine (the ``hf`` backend samples with the actor itself)."""
        if self.is_vllm:
            self.engine.sync_weights(actor)

    @contextlib.contextmanager
    def evaluation(self, seed: int):
        """The evaluation policy, its random stream restarted from ``seed``."""
        if not self.is_vllm:
            self.val_backend.generator.manual_seed(seed)
            yield self.val
            return
        engine = self.engine
        saved = (engine.temperature, engine.top_p, engine.seed, engine.requests_made)
        engine.temperature, engine.top_p, engine.seed, engine.requests_made = self.config.val_temperature, 1.0, seed, 0
        try:
            yield self.val
        finally:
            engine.temperature, engine.top_p, engine.seed, engine.requests_made = saved


def make_env_groups(manager: EnvManager, prefix: str, dist: Dist, seed: int, fixed: bool,
                    config_seed: int = 0) -> EnvGroups | MatchGroups:
    """This rank's share of a manager's env groups (the engine owns partition, sharding and seeds); with an
    ``opponent``, its share of two-player matches (:class:`trainers.rl.matches.MatchGroups`; the training opponent's
    stream is seeded from the run's ``config_seed``, the validation opponent's is the same in every run).

    Raises:
        ConfigError: an env rejects ``env_kwargs`` (building every env is the check).
    """
    try:
        if manager.opponent is not None:  # two-player matches
            return MatchGroups(manager.tags[0], manager.num_env_groups, manager.group_size, opponent=manager.opponent,
                               env_kwargs=manager.env_kwargs, learner_seats=manager.learner_seats, seed=seed,
                               fixed_seeds=fixed, shard=(dist.rank, dist.world_size),
                               opponent_seed=seed_from(0 if fixed else config_seed, 4, int(fixed)),
                               snapshot_every=manager.snapshot_every)
        partition = manager.num_groups_partition or even_partition(manager.num_env_groups, len(manager.tags))
        return EnvGroups(manager.tags, partition, manager.group_size,
                         env_kwargs=manager.env_kwargs, seed=seed, fixed_seeds=fixed,
                         shard=(dist.rank, dist.world_size))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{prefix}.env_kwargs={manager.env_kwargs} cannot build {', '.join(manager.tags)}: "
                          f"{str(error).splitlines()[0]}") from None


def prompt_fits(config: TrainConfig, tokenizer: Any) -> Callable[[list[dict[str, str]]], bool] | None:
    """ROLL's ``sequence_length`` as the engine's per-turn check: prompt tokens + ``max_new_tokens`` fit (``None``
    without a cap)."""
    if config.sequence_length is None:
        return None
    cap = config.sequence_length - config.max_new_tokens
    return lambda messages: len(encode(tokenizer, render(tokenizer, messages))) <= cap


def play(groups: EnvGroups, policy: Any, history: int | None, dist: Dist,
         prompt_fits: Any = None) -> list[Trajectory]:
    """Roll out this rank's groups and gather every rank's trajectories (global order).

    Raises:
        ConfigError: a prompt and the reply budget outgrow the model's positions (no ``sequence_length`` cap)."""
    try:
        return play_episodes(groups, policy, history=history, prompt_fits=prompt_fits,
                             gather=dist.gather).trajectories
    except PromptTooLong as error:
        raise ConfigError(f"a prompt of {error.length} tokens + max_new_tokens={error.max_new_tokens} outgrows the "
                          f"model's {error.max_positions} positions: set sequence_length: {error.max_positions} (an "
                          "episode whose next prompt would not fit ends there, as ROLL's), or lower max_new_tokens, "
                          "or shorten the prompts (history_length, prompt: compact)") from None


def rollout_metrics(trajectories: list[Trajectory], prefix: str, *, turn_prefix: str | None = None
                    ) -> dict[str, float]:
    """Success, score, turns, reply length and format validity of a batch of episodes; for two-player matches (the
    last turn's ``info["outcome"]``) also the win, draw and loss rates (success is a win, the score the payoff).
    The keys are ``{prefix}/...``; those of turns, reply length and validity ``{turn_prefix}/...`` if given (the
    training record: ``reward/success`` beside ``rollout/turns``)."""
    turns = [turn for t in trajectories for turn in t.turns]
    lengths = [len(turn.token_ids) for turn in turns if turn.token_ids is not None]
    per_turn = turn_prefix or prefix
    out = {
        f"{prefix}/success": float(np.mean([t.success for t in trajectories])),
        f"{prefix}/score": float(np.mean([t.episode_reward for t in trajectories])),
        f"{per_turn}/turns": float(np.mean([len(t.turns) for t in trajectories])),
        f"{per_turn}/format_valid": float(np.mean([bool(turn.info.get("format_valid")) for turn in turns])),
        f"{per_turn}/action_valid": _mean([bool(turn.info["action_is_valid"]) for turn in turns
                                           if "action_is_valid" in turn.info]),  # NaN for matches: not reported
        f"{per_turn}/response_length": float(np.mean(lengths)) if lengths else float("nan"),
    }
    outcomes = [t.turns[-1].info.get("outcome") for t in trajectories if t.turns]
    if outcomes and all(o in ("win", "draw", "loss") for o in outcomes):  # two-player matches (trainers/rl/matches.py)
        for name in ("win", "draw", "loss"):
            out[f"{prefix}/{name}"] = float(np.mean([o == name for o in outcomes]))
    per_env = Played(trajectories).success
    if len(per_env) > 1 or prefix == "val":
        out.update({f"{prefix}/{tag}/success": rate.rate for tag, rate in per_env.items()})
    return out


def _mean(values: list[bool]) -> float:
    return float(np.mean(values)) if values else float("nan")


def pass_at_k(trajectories: list[Trajectory]) -> float:
    """Fraction of env groups with at least one success."""
    groups: dict[str, bool] = {}
    for t in trajectories:
        groups[t.group_key] = groups.get(t.group_key, False) or t.success
    return float(np.mean(list(groups.values())))


def play_validation(groups: EnvGroups, sampler: Sampler, config: TrainConfig, dist: Dist,
                    seed: int, prompt_fits: Any = None) -> tuple[dict[str, float], list[bool]]:
    """Play the validation seeds (the same ones every time, sampling noise reseeded from ``seed``), under the same
    length cap as training (``prompt_fits``)."""
    with sampler.evaluation(seed) as policy, sampler.generation_context():
        trajectories = play(groups, policy, config.val_env_manager.history_length, dist, prompt_fits)
    return rollout_metrics(trajectories, "val"), [t.success for t in trajectories]
