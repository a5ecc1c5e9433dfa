"""The seam between rollouts and updates: trajectories become a :class:`Samples` batch of training rows.

- :func:`trajectory_samples` (StarPO, StarPO-S): one row per episode, the whole conversation, the loss mask over
  every reply the model generated (RAGEN; ROLL's ``TrajEnvManager``).
- :func:`step_samples` (GiGPO): one row per turn, that turn's prompt exactly as the model read it (under the
  history window) followed by its reply; the loss mask covers that reply only (verl-agent; ROLL's
  ``StepEnvManager``).

Both keep, per row, the ids the advantage functions need: env group, tag, episode, the state the reply acted from
(GiGPO anchors), the step index, the row's step reward and its episode's score. Tokens come from the rollout layer's
token views (:mod:`agentgym_bench.rollout.tokens`): the replies keep the token ids the policy sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import torch  # noqa: TID253 - trainers/ runs on torch

from agentgym_bench.rollout.tokens import collate, step_views, trajectory_token_view
from agentgym_bench.rollout.trajectory import Trajectory
from trainers.algos.advantages import state_ids_from_keys


@dataclass
class Samples:
    """A batch of B training rows, right-padded to T tokens.

    Attributes:
        input_ids: (B, T) long.
        attention_mask: (B, T) long, 1 on real tokens.
        loss_mask: (B, T) bool, True on the generated reply tokens that are trained.
        token_rewards: (B, T) float, each turn's reward on the last token of its reply (inside the row).
        scores: (B,) float, the return (sum of turn rewards) of the row's episode.
        success: (B,) bool, the row's episode succeeded.
        group_ids: (B,) long, env group (episodes from the same env id and seed in this rollout).
        tag_ids: (B,) long, env id.
        episode_ids: (B,) long, the episode.
        state_ids: (B,) long, the state the row's reply acted from (``Turn.state_key``; first turn for whole
            trajectories).
        step_index: (B,) long, turn number of the row (0 for whole trajectories).
        step_rewards: (B,) float, the row's turn reward (the episode score for whole trajectories).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    token_rewards: torch.Tensor
    scores: torch.Tensor
    success: torch.Tensor
    group_ids: torch.Tensor
    tag_ids: torch.Tensor
    episode_ids: torch.Tensor
    state_ids: torch.Tensor
    step_index: torch.Tensor
    step_rewards: torch.Tensor

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def select(self, index: torch.Tensor | Sequence[int]) -> Samples:
        """The rows at ``index`` (a bool mask or integer indices; repeats allowed), same padding."""
        index = torch.as_tensor(index)
        return Samples(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def episode_first_rows(samples: Samples) -> torch.Tensor:
    """Index of one row per episode (its first), in ascending episode id."""
    return torch.as_tensor(np.unique(samples.episode_ids.numpy(), return_index=True)[1])


def _ids(keys: Sequence[Any]) -> torch.Tensor:
    return state_ids_from_keys(list(keys))


def _build(views: list, rows: list[tuple[Trajectory, int, int]], trajectories: Sequence[Trajectory],
           pad_token_id: int, max_length: int | None) -> Samples:
    """Samples from token views and, per row, ``(trajectory, episode index, turn index or -1)``."""
    batch = collate(views, pad_token_id, max_length=max_length)
    group_of = _ids([t.group_key for t in trajectories])
    tag_of = _ids([t.tag for t in trajectories])
    episodes = torch.tensor([e for _, e, _ in rows], dtype=torch.long)
    turns = [max(k, 0) for _, _, k in rows]
    return Samples(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        loss_mask=batch["loss_mask"].bool(),
        token_rewards=batch["rewards"],
        scores=torch.tensor([t.episode_reward for t, _, _ in rows], dtype=torch.float32),
        success=torch.tensor([t.success for t, _, _ in rows], dtype=torch.bool),
        group_ids=group_of[episodes],
        tag_ids=tag_of[episodes],
        episode_ids=episodes,
        state_ids=_ids([t.turns[k].state_key for (t, _, _), k in zip(rows, turns, strict=True)]),
        step_index=torch.tensor(turns, dtype=torch.long),
        step_rewards=torch.tensor([t.turns[k].reward if s >= 0 else t.episode_reward
                                   for (t, _, s), k in zip(rows, turns, strict=True)], dtype=torch.float32),
    )


def success_rewards(trajectory: Trajectory) -> Trajectory:
    """A copy whose turn rewards are the format penalty of the turn (``info["format_penalty"]``, 0 if absent) plus
    1 on the last turn of a successful episode: the episode score is then success minus format penalties, and the
    env's shaping (step penalties, partial rewards) no longer counts (``TrainConfig.train_reward: success``)."""
    last = len(trajectory.turns) - 1
    turns = [replace(turn, reward=float(turn.info.get("format_penalty", 0.0))
                     + (1.0 if trajectory.success and k == last else 0.0))
             for k, turn in enumerate(trajectory.turns)]
    return replace(trajectory, turns=turns)


def trajectory_samples(trajectories: Sequence[Trajectory], tokenizer: Any, *,
                       max_length: int | None = None, tito: bool = False) -> Samples:
    """One row per episode (needs trajectories rolled out with the full conversation, ``history=None``); ``tito``
    builds them token-in-token-out (:func:`agentgym_bench.rollout.tokens.trajectory_token_view`).

    Raises:
        ValueError: an episode has no turn, a trajectory used a history window, or a row exceeds ``max_length``.
    """
    if any(not t.turns for t in trajectories):
        raise ValueError("every trajectory needs at least one turn")
    views = [trajectory_token_view(t, tokenizer, tito=tito) for t in trajectories]
    rows = [(t, e, -1) for e, t in enumerate(trajectories)]
    return _build(views, rows, trajectories, tokenizer.pad_token_id, max_length)


def step_samples(trajectories: Sequence[Trajectory], tokenizer: Any, *, max_length: int | None = None) -> Samples:
    """One row per turn of every episode, in episode order then turn order."""
    views = step_views(trajectories, tokenizer)
    rows = [(trajectory, e, k) for e, trajectory in enumerate(trajectories) for k in range(len(trajectory.turns))]
    return _build(views, rows, trajectories, tokenizer.pad_token_id, max_length)


def adjust_batch(n: int, divisor: int, mode: str, rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """Row indices that make a batch of ``n`` rows a multiple of ``divisor`` (ROLL ``batch_adjust_mode``).

    - ``copy``: append ``divisor - n % divisor`` randomly chosen rows (with replacement only if more are needed
      than exist).
    - ``delete``: drop ``n % divisor`` random rows; falls back to ``copy`` when that would drop everything.
    - ``auto``: ``delete`` if fewer than half a divisor would go, else ``copy``.
    - ``random_sample``: exactly ``divisor`` rows drawn without replacement (``copy`` when ``n < divisor``).

    Unlike ROLL and verl-agent, the loop adjusts *after* computing advantages, so duplicated rows never change a
    group's statistics.

    Returns:
        ``(index, added, removed)``: sorted row indices (repeats for copies) and how many rows were added / removed.
    """
    if n < 1 or divisor < 1:
        raise ValueError(f"n={n} and divisor={divisor} must be positive")
    remainder = n % divisor
    if mode == "random_sample" and n >= divisor:
        return np.sort(rng.choice(n, divisor, replace=False)), 0, n - divisor
    if remainder == 0:
        return np.arange(n), 0, 0
    if mode == "auto":
        mode = "delete" if remainder < divisor / 2 and n > remainder else "copy"
    if mode == "delete" and n > remainder:
        return np.sort(rng.choice(n, n - remainder, replace=False)), 0, remainder
    if mode not in ("copy", "delete", "random_sample"):
        raise ValueError(f"mode={mode!r} is not one of copy, delete, auto, random_sample")
    extra = divisor - remainder
    added = rng.choice(n, extra, replace=extra > n)
    return np.sort(np.concatenate([np.arange(n), added])), extra, 0
