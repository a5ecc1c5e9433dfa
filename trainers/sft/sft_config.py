"""The warm start's configuration: one typed dataclass whose field docstrings are the documentation.

The warm start (:mod:`trainers.sft.warmstart`) is supervised fine-tuning on oracle demonstrations; :class:`SFTConfig`
holds every setting of one run (one stage of a recipe). It is read like RL's :class:`~trainers.rl.config.TrainConfig`,
by the one loader (:mod:`trainers.runtime.config_loading`): dataclass defaults < the YAML file < ``key=value``
overrides, unknown keys an error naming the closest one, each value checked against its field's type, and
``__post_init__`` checking the rest. The defaults are the reference recipe's first stage; the bundled
``trainers/configs/warmstart-*.yaml`` are the stages of the published checkpoint's recipe and of the smoke recipe
(``agentgym-bench warmstart --list``).

YAML example (the reference recipe's second stage, ``warmstart-2.yaml``)::

    model: warmstart
    episodes: {AgentSokoban-v0: 12000, AgentFrozenLake-v0: 6000, AgentFrozenLakeNoSlip-v0: 12000,
               AgentBandit-v0: 1000}
    epochs: 16
    lr: 1.0e-3
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym_bench.multiagent.bargain import BARGAIN_IDS
from agentgym_bench.registration import check_env_id
from agentgym_bench.rollout.scripted import DEMONSTRATORS, has_demonstrator
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START, check_seeds_disjoint
from trainers.runtime import config_loading
from trainers.runtime.config_loading import ConfigError, check_types, positive_int

DEFAULT_EPISODES = {"AgentSokoban-v0": 180_000, "AgentFrozenLake-v0": 6_000, "AgentFrozenLakeNoSlip-v0": 12_000,
                    "AgentBandit-v0": 1_000}
"""Demonstration episodes per env of the default warm start (run 10 of docs/lab/2026-11-22-warm-start-ablations.md):
one model for the suite's 4x4/6x6 grid envs and Bandit, most of the budget where reading the board is hardest (Sokoban
success grew with every doubling of its demonstrations: 0.44, 0.50, 0.59-0.66, 0.82 at 30, 45, 90, 180 thousand
episodes)."""
DEFAULT_ENVS = tuple(DEFAULT_EPISODES)
DEFAULT_PROCESSES = 2
"""Data-parallel processes of a warm start whose ``processes`` is ``null`` (at most the CPU count), one torch thread
each: on two idle cores 1.85x one thread and 1.06x two threads of one process; beside one busy process 1.20x one
thread, where two threads fall to 0.62x (benchmarks/warmstart_threads.md). The process and thread counts change the
last bits of the sums, so the same seed on other counts gives another model, as another seed would (run 7 of
docs/lab/2026-11-22-warm-start-ablations.md: Sokoban 0.66 on one thread, 0.59 on two)."""
MATCH_ENVS = tuple(BARGAIN_IDS)
"""Two-player env ids with a demonstrator: random-demand matches (:mod:`trainers.sft.warmstart`)."""


@dataclass
class SFTConfig:
    """Every setting of a warm start (one stage). Defaults: the reference recipe's first stage."""

    model: str = "default"
    """The model to start from (``agentgym_bench.paths.resolve_model``: a folder, a name under
    ``$AGENTGYM_BENCH_HOME/models`` or a hub id); ``default`` is built first if missing. A warm-started model (a
    folder with ``warmstart.json``) makes this run a later stage of its recipe."""
    output: str | None = None
    """The run folder, which ends as the fine-tuned model: ``config.yaml``, ``metrics.jsonl`` and ``checkpoint-N/``
    while it trains (a stopped run started again continues from its last checkpoint), then the Hugging Face model
    and ``warmstart.json`` (``null``: ``$AGENTGYM_BENCH_HOME/models/warmstart``, which ``pretrain: warmstart`` in the
    training configs reads). It may be the folder of ``model``: that is replaced only once the new model is done."""
    envs: tuple[str, ...] = DEFAULT_ENVS
    """Agent env ids to learn (a YAML list); ``Bargain-v0`` plays random-demand matches, both seats kept."""
    prompt: str = "compact"
    """Prompt template of the envs (``compact`` for the small model, or ``ragen``)."""
    history: int | None = 0
    """History window of the prompts in turns (``0``: the current observation only; ``null``: the whole
    conversation)."""
    epsilon: float = 0.0
    """Probability that a demonstration turn is a random valid action instead of the oracle's (0: clean
    demonstrations imitate best, docs/lab/2026-11-22-warm-start-ablations.md)."""
    oracle_actions: int | None = 2
    """Most actions a demonstration turn of the oracle plans (``null``: the env's per-turn limit)."""
    demonstrators: dict[str, str] = field(default_factory=dict)
    """Env id -> a demonstrator other than the oracle (``{AgentWebShop-v0: first-hit}``: the shopper that searches
    the instruction, opens the first hit, clicks the options the instruction names and buys, every action a copy
    from the page; ``agentgym_bench/envs/webshop/first_hit.py``)."""
    copy_augment: int = 0
    """Add this many copy variants of each WebShop demonstration turn whose reply copies from the page (search and
    results pages), as one-turn episodes: the instruction's words or the product codes replaced by random ones in
    the page and the reply, so only copying predicts them (``agentgym_bench/envs/webshop/augment.py``; made for
    ``history: 0``, where a turn's prompt is its page)."""
    episodes: int | dict[str, int] = field(default_factory=lambda: dict(DEFAULT_EPISODES))
    """Demonstration episodes per env, on training seeds from ``TRAIN_SEED_START``: one number for every env, or
    ``{env_id: episodes}`` naming each env of ``envs`` (entries of other envs are ignored)."""
    epochs: int = 1
    """Passes over the demonstrations."""
    batch_size: int = 128
    """Rows (turns) per optimiser step."""
    group_by_length: bool = False
    """Make each step of rows of similar length (:func:`trainers.sft.warmstart.epoch_batches`): less padding, faster on
    envs whose prompts differ in length (WebShop's pages: 110 to ~870 tokens); another order, so another model."""
    lr: float = 2e-3
    """Peak learning rate (AdamW, weight decay 0.01, linear warm-up then cosine decay)."""
    warmup: float = 0.05
    """Fraction of the steps with linear warm-up."""
    dtype: str = "float32"
    """Compute dtype of the fine-tuning: ``float32``; ``bfloat16`` autocast (weights, gradients and optimiser states
    stay float32); or ``auto``: whichever a short forward + backward probe shows faster on this machine (the warm
    start runs on the CPU: it has no ``device``), recorded in the run folder's ``compute_dtype.json`` and kept when
    the run resumes (:mod:`trainers.runtime.compute_dtype`). The evaluation at the end generates in float32 either
    way. The bundled stages keep ``float32``, so that they make the published models."""
    eval_episodes: int = 500
    """Validation episodes per env (seeds ``0 .. eval_episodes-1``)."""
    temperature: float = 1.0
    """Sampling temperature of the evaluation."""
    max_new_tokens: int = 16
    """Reply budget in tokens when generating."""
    seed: int = 0
    """Seeds demonstrations, shuffling, training and evaluation sampling."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra ``gym.make`` keyword arguments for every env (``prompt`` is set by its own key)."""
    processes: int | None = None
    """Data-parallel processes on this machine (gloo), each on ``num_threads`` threads: the way to use several
    cores, faster than threads above all on cores shared with other work (``null``: :data:`DEFAULT_PROCESSES`, at
    most the CPU count). Under ``torchrun`` its processes are the ones (``null`` or the same number). Another
    process count gives another model."""
    num_threads: int = 1
    """torch intra-op threads of each process; another thread count gives another model."""
    save_steps: int = 250
    """Optimiser steps between checkpoints (``checkpoint-N/`` in ``output``; a few minutes of the default model on 2
    cores), and one after the last step."""

    def __post_init__(self) -> None:
        if isinstance(self.envs, list):
            self.envs = tuple(self.envs)
        check_types(self)
        if not 0 <= self.epsilon <= 1:
            raise ConfigError(f"epsilon={self.epsilon} must be in [0, 1]")
        for name in ("epochs", "batch_size", "eval_episodes", "max_new_tokens", "num_threads", "save_steps"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 1")
        for name in ("processes", "oracle_actions"):
            if getattr(self, name) is not None:
                positive_int(name, getattr(self, name))
        if self.history is not None and self.history < 0:
            raise ConfigError(f"history={self.history} must be >= 0, or null for the whole conversation")
        if self.dtype not in ("float32", "bfloat16", "auto"):
            raise ConfigError(f"dtype={self.dtype!r} must be one of float32, bfloat16, auto")
        if self.copy_augment < 0:
            raise ConfigError(f"copy_augment={self.copy_augment} must be >= 0")
        if not self.envs:
            raise ConfigError("envs must name at least one env id")
        for env_id in self.envs:  # a typo named here, with what it may have meant, before anything else is read
            if env_id not in MATCH_ENVS:
                check_env_id(env_id)
        for env_id, name in self.demonstrators.items():
            if env_id not in self.envs or env_id in MATCH_ENVS or not has_demonstrator(env_id, name):
                raise ConfigError(f"demonstrators={self.demonstrators}: each must name an env of {list(self.envs)} "
                                  f"and a demonstrator its game has (of {list(DEMONSTRATORS)}; first-hit: WebShop)")
        if isinstance(self.episodes, dict) and not set(self.envs) <= set(self.episodes):
            raise ConfigError(f"episodes={self.episodes} must name every env of {list(self.envs)}: give one number "
                              "for every env (episodes=N) or one for each (episodes={ID: N, ...})")
        for env_id in self.envs:
            if self.episodes_of(env_id) < 1:
                raise ConfigError(f"episodes={self.episodes} must be >= 1 for every env")
        self._check_seeds()

    def _check_seeds(self) -> None:
        """Demonstrations on training seeds, evaluation on validation seeds: apart, and apart from the test seeds."""
        if not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed={self.seed} must be an integer from 0 to 2**63 - 1 (it seeds the shuffles and "
                              "the evaluation's sampling)")
        try:
            for env_id in self.envs:
                demonstrations = range(TRAIN_SEED_START, TRAIN_SEED_START + self.episodes_of(env_id))
                check_seeds_disjoint(f"demonstration seeds of {env_id}", demonstrations)
            validation = range(VALIDATION_SEED_START, VALIDATION_SEED_START + self.eval_episodes)
            check_seeds_disjoint("validation seeds", validation)
            check_seeds_disjoint("validation seeds", validation, "the demonstration (training) seeds",
                                 range(TRAIN_SEED_START, TRAIN_SEED_START + max(map(self.episodes_of, self.envs))))
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def episodes_of(self, env_id: str) -> int:
        """Demonstration episodes of ``env_id``."""
        return self.episodes[env_id] if isinstance(self.episodes, dict) else self.episodes

    @property
    def all_env_kwargs(self) -> dict[str, Any]:
        return {"prompt": self.prompt, **self.env_kwargs}

    def kwargs_of(self, env_id: str) -> dict[str, Any]:
        """The env's keyword arguments: ``env_kwargs``, plus ``prompt`` for single-agent envs."""
        return dict(self.env_kwargs) if env_id in MATCH_ENVS else self.all_env_kwargs

    def resolved_processes(self, cpu_count: int | None) -> int:
        """``processes``, or for ``null`` :data:`DEFAULT_PROCESSES` at most ``cpu_count``."""
        return self.processes if self.processes is not None else min(DEFAULT_PROCESSES, cpu_count or 1)

    # -- I/O -------------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``envs`` as a list), loadable again with :func:`sft_config_from_dict`."""
        return {**dataclasses.asdict(self), "envs": list(self.envs)}

    def save(self, path: str | os.PathLike) -> None:
        config_loading.save_yaml(self.to_dict(), path)


def sft_config_from_dict(data: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any] = ()) -> SFTConfig:
    """Defaults < ``data`` < ``overrides`` (``key=value`` strings or a nested dict), by the one loader
    (:func:`trainers.runtime.config_loading.config_from_dict`)."""
    return config_loading.config_from_dict(SFTConfig, data, overrides)


def load_sft_config(path: str | os.PathLike | None, overrides: Sequence[str] | Mapping[str, Any] = ()) -> SFTConfig:
    """Read a YAML config file (:func:`trainers.runtime.config_loading.read_yaml`; ``None``: the defaults alone), then
    apply ``overrides``.

    Raises:
        ConfigError: the file is missing, empty, not YAML or not a mapping, or the config is invalid.
    """
    return sft_config_from_dict({} if path is None else config_loading.read_yaml(path), overrides)
