"""Signal-aware sampling (``TrainConfig.dynamic_sampling``): an oversampled rollout pool whose env groups are kept by
in-group reward std, zero-variance groups dropped and refilled. docs/trainers.md, "Signal-aware sampling".

The definitions implemented here:

- **RAGEN-2** (arXiv 2604.06268), SNR-aware filtering: when the rewards of a prompt's group barely vary, the task
  gradient is weak against the regularisers (KL, entropy); so each iteration keeps, from the sampled pool, the
  prompts (env groups) with the highest reward variance. We rank by the std, which orders groups as the variance does.
- **DAPO** (arXiv 2503.14476, "Dynamic Sampling"): over-sample and filter out the prompts whose group accuracy is 1
  or 0, i.e. whose rewards are all equal (zero variance: a GRPO advantage of 0 for every member), and keep sampling
  until the batch is full of groups with non-zero variance. DAPO samples without bound (or raises after
  ``max_num_gen_batches`` batches, verl's recipe); we refill for at most ``max_refill_rounds`` rounds and then fill
  the batch's remaining places with the zero-variance leftovers, so every iteration trains on ``num_env_groups``
  groups.

A group is *informative* when the in-group (unbiased) std of its training scores is above :data:`INFORMATIVE_EPS`,
the floor under which :func:`trainers.algos.advantages.group_normalize` gives every member an advantage of 0.

The functions are pure: tensors (or callables) in, values out; no config, no random state, no logging.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import torch  # noqa: TID253 - trainers/ runs on torch

from trainers.algos.advantages import select_groups_by_std

__all__ = ["INFORMATIVE_EPS", "SELECTION_RULES", "PoolSelection", "count_informative", "fill_pool",
           "pool_round_index", "select_pool_groups"]

INFORMATIVE_EPS = 1e-6
"""In-group std at or below which a group carries no signal (``group_normalize``'s ``eps``)."""

SELECTION_RULES = ("top_std", "first_nonzero")
"""``top_std``: the informative groups with the largest in-group std (RAGEN-2); ``first_nonzero``: the first
informative groups in sampling order (DAPO). Zero-variance groups come after every informative one in both."""

T = TypeVar("T")


class PoolSelection(NamedTuple):
    """Output of :func:`select_pool_groups`."""

    keep: torch.Tensor  # (N,) bool: the sample belongs to a kept group
    group_ids: torch.Tensor  # (G,) the distinct group ids, ascending (= sampling order for ids numbered that way)
    group_std: torch.Tensor  # (G,) unbiased in-group std of the scores (0 for a singleton group)
    informative: torch.Tensor  # (G,) bool: std > INFORMATIVE_EPS
    group_kept: torch.Tensor  # (G,) bool


def select_pool_groups(scores: torch.Tensor, group_ids: torch.Tensor, num_keep: int,
                       rule: str = "top_std") -> PoolSelection:
    """Keep ``num_keep`` of the pool's G groups: informative groups first, ranked by ``rule``; zero-variance groups
    only for the places left when fewer than ``num_keep`` are informative (DAPO never keeps them; RAGEN-2's top-k by
    variance puts them last).

    - ``top_std``: informative groups by in-group std, largest first (RAGEN-2's SNR-aware filter).
    - ``first_nonzero``: informative groups in ascending group id, i.e. sampling order when ids number the groups in
      the order they were played (DAPO's dynamic sampling keeps the first ones that fill the batch).

    Ties (stds equal to 9 decimals, as :func:`~trainers.algos.advantages.select_groups_by_std`) and the zero-variance
    leftovers go by group id, smaller first, so the choice is deterministic.

    Args:
        scores: (N,) one training score per episode (the score the advantage sees, before normalisation).
        group_ids: (N,) integer env-group id per episode.
        num_keep: groups to keep, 1 <= num_keep <= G.
        rule: one of :data:`SELECTION_RULES`.

    Returns:
        :class:`PoolSelection`: the (N,) keep mask and the per-group stds, informative flags and choice.

    Raises:
        ValueError: bad shapes or dtypes, ``num_keep`` out of range or an unknown ``rule``.
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule must be one of {SELECTION_RULES}, got {rule!r}")
    uniq, std = _group_stds(scores, group_ids)
    if not 1 <= num_keep <= uniq.shape[0]:
        raise ValueError(f"num_keep={num_keep} must be between 1 and the pool's {uniq.shape[0]} groups")
    informative = std > INFORMATIVE_EPS
    rank = torch.round(std, decimals=9) if rule == "top_std" else torch.zeros_like(std)
    key = torch.where(informative, rank, torch.full_like(rank, -1.0))  # zero-variance groups after all the others
    order = torch.sort(-key, stable=True).indices  # uniq is ascending: a stable sort keeps id order among ties
    group_kept = torch.zeros_like(informative)
    group_kept[order[:num_keep]] = True
    inverse = torch.searchsorted(uniq, group_ids)
    return PoolSelection(keep=group_kept[inverse], group_ids=uniq, group_std=std.to(scores.dtype),
                         informative=informative, group_kept=group_kept)


def count_informative(scores: torch.Tensor, group_ids: torch.Tensor) -> int:
    """Groups whose in-group std of ``scores`` (N,) exceeds :data:`INFORMATIVE_EPS` (``group_ids`` (N,) integer)."""
    return int((_group_stds(scores, group_ids)[1] > INFORMATIVE_EPS).sum())


def _group_stds(scores: torch.Tensor, group_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(distinct ids (G,) ascending, unbiased in-group std (G,) float64). In float64, so that groups whose exact stds
    are equal stay equal to 9 decimals (float32 sums in another order differ by ~1e-7) and tie by id as documented.

    Raises:
        ValueError: ``scores`` not (N,) or ``group_ids`` not (N,) integer.
    """
    if not isinstance(scores, torch.Tensor) or scores.dim() != 1:
        raise ValueError(f"scores must be a 1-D (N,) tensor, got {getattr(scores, 'shape', type(scores))}")
    every = select_groups_by_std(scores.double(), group_ids, 1.0)  # validates group_ids; per-group stds
    return every.group_ids, every.group_std


def fill_pool(play_round: Callable[[int], list[T]], informative: Callable[[list[T]], int], need: int,
              max_refill_rounds: int) -> tuple[list[T], int]:
    """DAPO's refill, bounded: play round 0, then refill rounds ``1, 2, ...`` while the pool holds fewer than
    ``need`` informative groups, at most ``max_refill_rounds`` of them.

    Args:
        play_round: ``r -> the episodes of round r`` (each round a fresh set of groups: new seeds).
        informative: ``pool -> its number of informative groups`` (e.g. :func:`count_informative` on its scores).
        need: informative groups wanted (the batch's ``num_env_groups``).
        max_refill_rounds: refill rounds allowed, >= 0.

    Returns:
        ``(pool, refill rounds played)``: every round's episodes, in the order played.
    """
    if max_refill_rounds < 0:
        raise ValueError(f"max_refill_rounds={max_refill_rounds} must be >= 0")
    pool = list(play_round(0))
    rounds = 0
    while rounds < max_refill_rounds and informative(pool) < need:
        rounds += 1
        pool += play_round(rounds)
    return pool, rounds


def pool_round_index(step: int, refill_round: int, max_refill_rounds: int) -> int:
    """The rollout index (the env groups' seed counter) of round ``refill_round`` of iteration ``step`` (1-based):
    every iteration owns ``max_refill_rounds + 1`` consecutive indices, used or not, so the seeds of an iteration do
    not depend on how many rounds earlier ones needed (a resumed run plays the same seeds). With no refill this is
    ``step - 1``, the synchronous loop's counter."""
    return (step - 1) * (max_refill_rounds + 1) + refill_round
