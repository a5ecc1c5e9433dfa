"""Train on our agent envs with TRL's ``GRPOTrainer``: multi-turn episodes through either of its env hooks.

TRL (https://github.com/huggingface/trl; the extra pins 1.16) offers two hooks for multi-turn environments, both
marked experimental in TRL; this module fits our envs to each.

``rollout_func`` (:class:`EpisodeRollout`): a ``rollout_func(prompts, trainer) -> dict`` replaces generation. It
receives the batch's prompts (each repeated ``num_generations`` times, one entry per completion) and returns
``prompt_ids``, ``completion_ids`` and ``logprobs``; an ``env_mask`` (1 = model token, 0 = environment token)
becomes TRL's tool mask, so the loss covers only the model's own tokens; any other key reaches the reward functions
as a per-completion argument. Each prompt names an episode (:func:`episode_prompt`: env id and seed, as JSON); the
completions of one prompt form a GRPO group that starts from the same state. It plays every episode with the
rollout engine (:class:`~agentgym_bench.rollout.EnvGroups`, the trainer's model behind
:class:`~agentgym_bench.rollout.hf.HFPolicy`) and returns each episode as our token view
(:func:`~agentgym_bench.rollout.trajectory_token_view`): ``prompt_ids`` = the first prompt, ``completion_ids`` =
every reply and every later observation in order, ``env_mask`` = the view's ``loss_mask`` over them, each cut at
the trainer's ``max_completion_length`` tokens (TRL's loss assumes none is longer; a warning counts the cut
episodes, whose reward is still the whole episode's). The episode's return goes to the reward function
:func:`env_reward`. The replies are our free-text format
(``<answer>Up || Left</answer>``), token for token, without a tool schema; generation is our ``HFPolicy``
(transformers, one batched call per turn within each group), not TRL's.

``environment_factory`` (:class:`AgentToolEnv`): TRL makes one environment per rollout, calls its
``reset(**row)`` with the dataset row (the returned first observation is appended to the row's user message),
offers its public methods as function-calling tools, generates and runs the tool calls itself, and scores each
rollout with the environment's ``get_reward()``. ``AgentToolEnv`` plays the agent env in its tool format
(``action_format="tool"``, :mod:`agentgym_bench.agent.tools`) and offers that format's one tool,
``take_actions(actions)``: one turn with those actions (as the well-formed tool-call reply), answered with the env's
next observation. Rows come from :func:`environment_dataset` (``env_id`` and ``seed`` columns).
TRL's generation and tool loop are used, so the model and its chat template must do tool calls (Qwen2.5, Qwen3,
Llama 3.1, ...).

Install (from a clone): ``pip install -e '.[trl]'`` (trl 1.16 needs Python >= 3.11).
Example: ``examples/trl_grpo_frozenlake.py``; both hooks in ``docs/integrations.md``.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

import agentgym_bench  # noqa: F401 - registers the env ids
from agentgym_bench.adapters import require
from agentgym_bench.agent.policies import agent_env
from agentgym_bench.agent.tools import format_tool_reply
from agentgym_bench.registration import AGENT_ENVS
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.tokens import sampled_logprobs, trajectory_token_view
from agentgym_bench.rollout.trajectory import Trajectory
from agentgym_bench.seeds import check_seeds_disjoint

require("trl", "trl")


def checkpointing_off() -> dict[str, bool]:
    """``GRPOConfig`` keyword arguments that turn activation checkpointing off (TRL's ``GRPOConfig`` turns it on).

    Newer transformers name the option ``activation_checkpointing`` and warn (``FutureWarning``) on the old name
    ``gradient_checkpointing``; the transformers releases TRL 1.16 still accepts know only the old name. This picks
    the name the installed ``TrainingArguments`` has.
    """
    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": False}


def episode_prompt(env_id: str, seed: int) -> str:
    """The prompt naming one training episode: ``'{"env_id": "AgentFrozenLake-v0", "seed": 10000}'``.

    Raises:
        ValueError: an unknown id, a seed that is not a non-negative integer, or one of the benchmark's held-out
            test seeds (:data:`~agentgym_bench.seeds.TEST_SEEDS`), which nothing may train on.
    """
    if env_id not in AGENT_ENVS:
        raise ValueError(f"unknown agent env id {env_id!r}; choose from {list(AGENT_ENVS)}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    check_seeds_disjoint("TRL training seeds", range(seed, seed + 1))
    return json.dumps({"env_id": env_id, "seed": seed})


def parse_episode_prompt(prompt: Any) -> tuple[str, int]:
    """``(env_id, seed)`` from :func:`episode_prompt`'s text (also inside a one-message conversation)."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], dict):
        prompt = prompt[0].get("content")
    try:
        spec = json.loads(prompt)
        env_id, seed = spec["env_id"], spec["seed"]
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"prompt {prompt!r} does not name an episode; build prompts with episode_prompt()") from e
    episode_prompt(env_id, seed)  # validates
    return env_id, seed


def episode_dataset(env_id: str, seeds: Sequence[int]) -> Any:
    """A ``datasets.Dataset`` with one row per seed: ``prompt`` (:func:`episode_prompt`), ``env_id``, ``seed``."""
    datasets = require("datasets", "trl")
    rows = {"prompt": [episode_prompt(env_id, int(s)) for s in seeds], "env_id": [env_id] * len(seeds),
            "seed": [int(s) for s in seeds]}
    return datasets.Dataset.from_dict(rows)


def env_reward(completions: list, env_reward: list[float], **kwargs: Any) -> list[float]:
    """TRL reward function: each completion's episode return, as the env gave it (``EpisodeRollout`` sets it)."""
    return [float(r) for r in env_reward]


class EpisodeRollout:
    """A TRL ``rollout_func`` that plays multi-turn episodes of our agent envs.

    Arguments:
        env_kwargs: ``gym.make`` keyword arguments for every episode (e.g. ``{"prompt": "compact"}``).
        temperature / top_p / max_new_tokens: sampling of each reply (:class:`HFPolicy`).
        seed: seeds the sampler's own ``torch.Generator`` (global RNGs are not touched).

    Attributes:
        trajectories: the episodes of the last call, in completion order (for logging or checks).
    """

    def __init__(self, *, env_kwargs: Mapping[str, Any] | None = None, temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 16, seed: int = 0):
        self.env_kwargs = dict(env_kwargs or {})
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_new_tokens": max_new_tokens, "seed": seed}
        self.policy: HFPolicy | None = None
        self.trajectories: list[Trajectory] = []

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        if self.policy is None or self.policy.model is not model:
            self.policy = HFPolicy(model, tokenizer, **self.sampling)
        was_training = model.training
        model.eval()
        try:
            self.trajectories = [t for env_id, seed, n in _groups(prompts) for t in self._play(env_id, seed, n)]
        finally:
            model.train(was_training)
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                "env_reward": [], "env_success": []}
        limit = getattr(trainer.args, "max_completion_length", None)
        cut = 0
        for trajectory in self.trajectories:
            prompt_ids, completion_ids, logprobs, env_mask = completion_view(trajectory, tokenizer)
            if limit is not None and len(completion_ids) > limit:
                completion_ids, logprobs, env_mask = completion_ids[:limit], logprobs[:limit], env_mask[:limit]
                cut += 1
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion_ids)
            out["logprobs"].append(logprobs)
            out["env_mask"].append(env_mask)
            out["env_reward"].append(trajectory.episode_reward)
            out["env_success"].append(float(trajectory.success))
        if cut:
            warnings.warn(f"{cut} of {len(self.trajectories)} episodes ran past max_completion_length={limit} tokens "
                          "(replies and the observations between them) and were cut there; their reward is still the "
                          "whole episode's. Raise max_completion_length, or shorten episodes (max_turns, "
                          "prompt='compact', max_new_tokens)", stacklevel=2)
        return out

    def _play(self, env_id: str, seed: int, n: int) -> list[Trajectory]:
        with EnvGroups([env_id], [1], n, env_kwargs=self.env_kwargs, seed=seed, fixed_seeds=True) as groups:
            return groups.rollout(self.policy, history=None)


def _groups(prompts: list) -> list[tuple[str, int, int]]:
    """Runs of equal prompts as ``(env_id, seed, count)``, in order (TRL repeats each prompt consecutively)."""
    runs: list[tuple[str, int, int]] = []
    for prompt in prompts:
        env_id, seed = parse_episode_prompt(prompt)
        if runs and runs[-1][:2] == (env_id, seed):
            runs[-1] = (env_id, seed, runs[-1][2] + 1)
        else:
            runs.append((env_id, seed, 1))
    return runs


def completion_view(trajectory: Trajectory, tokenizer: Any) -> tuple[list[int], list[int], list[float], list[int]]:
    """``(prompt_ids, completion_ids, logprobs, env_mask)`` of one episode from its token view.

    ``prompt_ids`` run up to the first reply; ``completion_ids`` hold the rest (replies and the observations
    between them); ``env_mask`` is 1 on reply tokens; ``logprobs`` are the sampled log-probs on reply tokens and 0.0
    on env tokens (TRL recomputes old log-probs when not using vLLM, so the filler is not used).
    """
    view = trajectory_token_view(trajectory, tokenizer)
    start = view.spans[0][0]
    logprobs = sampled_logprobs(view, trajectory)
    return view.input_ids[:start], view.input_ids[start:], logprobs[start:], view.loss_mask[start:]


def environment_dataset(env_id: str, seeds: Sequence[int], instruction: str = "") -> Any:
    """A ``datasets.Dataset`` for :class:`AgentToolEnv`, one row per seed: ``prompt`` (one user message holding
    ``instruction``, to which TRL appends the env's first observation), ``env_id`` and ``seed`` (read by
    ``AgentToolEnv.reset``). Training seeds only (:func:`episode_prompt` checks them)."""
    datasets = require("datasets", "trl")
    for seed in seeds:
        episode_prompt(env_id, int(seed))  # validates the id and the seed
    rows = {"prompt": [[{"role": "user", "content": instruction}] for _ in seeds], "env_id": [env_id] * len(seeds),
            "seed": [int(s) for s in seeds]}
    return datasets.Dataset.from_dict(rows)


class AgentToolEnv:
    """An agent env for TRL's ``environment_factory``: one episode at a time, played through the tool ``take_actions``.

    ``GRPOTrainer(environment_factory=AgentToolEnv, ...)``, or ``functools.partial(AgentToolEnv, prompt="compact")``
    for ``gym.make`` keyword arguments. TRL keeps a pool of these and calls ``reset(**row)`` before each rollout.

    The env runs in its tool format (``action_format="tool"``): its first observation asks for a ``take_actions``
    call, and each call is played as the reply that format reads, so the native env in tool format given the same
    seed and replies plays the same episode.

    Arguments:
        env_id: the agent env played when a row names none.
        **env_kwargs: ``gym.make`` keyword arguments for every episode (e.g. ``prompt="compact"``); not
            ``action_format``, which is ``"tool"``.

    Attributes (of the current episode):
        episode_reward: the sum of the env's rewards so far (``get_reward`` returns it).
        success: whether the episode was won.
        done: whether it ended (terminated or truncated); a later call is an error, which TRL hands the model.
        seed: the episode's seed.
        replies: the reply each call played (``<think></think>`` and a ``take_actions`` tool call), in order.
        infos: the env's ``info`` after reset and after every turn, in order.

    A rollout that stops calling the tool before the episode ends keeps the reward it earned: the reply that made
    no call is not scored as a turn (the native env would give it the format penalty).
    """

    def __init__(self, env_id: str = "AgentFrozenLake-v0", **env_kwargs: Any):
        episode_prompt(env_id, 0)  # validates the id
        if "action_format" in env_kwargs:
            raise ValueError("AgentToolEnv plays the env's tool format; leave out action_format")
        self.env_id = env_id
        self.env_kwargs = {**env_kwargs, "action_format": "tool"}
        self._env: Any = None
        self._env_of: str | None = None
        self.episode_reward = 0.0
        self.success = False
        self.done = True
        self.seed: int | None = None
        self.replies: list[str] = []
        self.infos: list[dict[str, Any]] = []

    def reset(self, seed: int | None = None, env_id: str | None = None, **row: Any) -> str:
        """Start the episode ``(env_id, seed)`` of a dataset row (other columns are ignored); returns its first
        observation. ``seed`` is required and must be a training seed."""
        env_id = env_id or self.env_id
        if seed is None:
            raise ValueError("AgentToolEnv.reset needs a seed: build the dataset with environment_dataset()")
        episode_prompt(env_id, seed)  # validates: a known id and a training seed
        if self._env is None or self._env_of != env_id:
            if self._env is not None:
                self._env.close()
            self._env, self._env_of = gym.make(env_id, **self.env_kwargs), env_id
        observation, info = self._env.reset(seed=seed)
        self.episode_reward, self.success, self.done = 0.0, False, False
        self.seed, self.replies, self.infos = seed, [], [info]
        return observation

    def take_actions(self, actions: list[str]) -> str:
        """Take actions in the game, in order, and see what happens.

        Args:
            actions: The actions to take this turn, first to last (for example ["Up", "Left"]).

        Returns:
            The game's answer: the reward of the turn and the new state.
        """
        if self._env is None:
            raise ValueError("no episode: reset() first")
        if self.done:
            raise ValueError("the episode is over; no more actions")
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise ValueError(f"actions must be a list of action words, not {actions!r}")
        reply = format_tool_reply(actions, enable_think=agent_env(self._env).enable_think)
        observation, reward, terminated, truncated, info = self._env.step(reply)
        self.replies.append(reply)
        self.episode_reward += float(reward)
        self.success = bool(info.get("success", False))
        self.done = bool(terminated or truncated)
        self.infos.append(info)
        return observation

    def get_reward(self) -> float:
        """The episode's return so far (TRL calls it once per rollout)."""
        return self.episode_reward
