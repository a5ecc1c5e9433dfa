"""Returns and advantages: group normalisation, GAE, the StarPO-S group filter, GiGPO, token broadcast.

Two kinds of input appear here:

- flat per-sample arrays of length N (trajectories) or S (env steps) with integer id arrays saying which group,
  episode or anchor state each sample belongs to. Ids are arbitrary integers (need not be contiguous or sorted);
- (B, T) token tensors with a mask (bool or 0/1) marking the generated (assistant) tokens.

All functions are pure: tensors in, tensors out, no config, no logging. Formulas, sources and the places where we
differ from RAGEN / verl / verl-agent / ROLL are in docs/trainers-math.md.
"""

import math
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import torch  # noqa: TID253 - trainers/ runs on torch

__all__ = [
    "NORM_METHODS",
    "GiGPOAdvantages",
    "GroupSelection",
    "broadcast_turn_values",
    "clip_advantages",
    "discounted_returns",
    "gae_advantages",
    "gigpo_advantages",
    "group_normalize",
    "select_groups_by_std",
    "state_ids_from_keys",
    "step_gae_advantages",
    "turn_index_from_mask",
]

NORM_METHODS = ("identity", "mean", "mean_std")
# verl-agent's GiGPO mode names for the same two normalisations.
_GIGPO_METHODS = {"mean": "mean", "mean_std": "mean_std", "mean_norm": "mean", "mean_std_norm": "mean_std"}


def _check_ids(name: str, ids: torch.Tensor, n: int) -> None:
    if ids.dim() != 1 or ids.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"{name} must be an integer tensor, got {ids.dtype}")


def _as_scores(name: str, scores: torch.Tensor) -> torch.Tensor:
    if scores.dim() != 1:
        raise ValueError(f"{name} must be 1-D (N,), got shape {tuple(scores.shape)}")
    return scores if scores.is_floating_point() else scores.to(torch.get_default_dtype())


def _group_mean_std(scores: torch.Tensor, group_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per-group statistics: (unique ids (G,), inverse (N,), counts (G,), mean (G,), unbiased std (G,)).

    A singleton group has std 0 (not NaN).
    """
    uniq, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    g = uniq.shape[0]
    mean = torch.zeros(g, dtype=scores.dtype, device=scores.device).index_add_(0, inverse, scores) / counts
    sq = torch.zeros_like(mean).index_add_(0, inverse, (scores - mean[inverse]) ** 2)
    std = torch.sqrt(sq / (counts - 1).clamp(min=1))
    return uniq, inverse, counts, mean, std


def group_normalize(
    scores: torch.Tensor, group_ids: torch.Tensor, method: str = "mean_std", eps: float = 1e-6
) -> torch.Tensor:
    """Normalise scores within groups: the GRPO / StarPO advantage (GRPO: Shao et al., arXiv 2402.03300).

    - ``identity``: ``A = R``.
    - ``mean``: ``A = R - mean_g(R)`` (ROLL ``method: mean``; GiGPO "w/o std").
    - ``mean_std``: ``A = (R - mean_g(R)) / (std_g(R) + eps)`` with the unbiased std, and ``A = 0`` for a group
      whose std is ``<= eps`` (zero-variance group: 0, never NaN; as RAGEN and ROLL).

    Which ids the caller passes picks the grouping (ROLL ``reward_normalization.grouping``): env-group ids
    (``traj_group_id`` / RAGEN ``state``), tag ids (RAGEN ``inductive``), or all zeros (``batch``).
    A singleton group gets 0 under ``mean`` and ``mean_std`` (RAGEN, ROLL), not its raw score (verl's GRPO).

    Args:
        scores: (N,) one score per sample (e.g. episode return); an integer tensor is cast to float.
        group_ids: (N,) integer group id per sample.
        method: one of :data:`NORM_METHODS`.
        eps: std floor and denominator epsilon for ``mean_std``.

    Returns:
        (N,) advantages, same dtype as ``scores`` (float).
    """
    scores = _as_scores("scores", scores)
    _check_ids("group_ids", group_ids, scores.shape[0])
    if method not in NORM_METHODS:
        raise ValueError(f"method must be one of {NORM_METHODS}, got {method!r}")
    if method == "identity":
        return scores.clone()
    _, inverse, _, mean, std = _group_mean_std(scores, group_ids)
    centered = scores - mean[inverse]
    if method == "mean":
        return centered
    std_i = std[inverse]
    return torch.where(std_i > eps, centered / (std_i + eps), torch.zeros_like(centered))


class GroupSelection(NamedTuple):
    """Output of :func:`select_groups_by_std`."""

    keep: torch.Tensor  # (N,) bool: sample belongs to a kept group
    group_ids: torch.Tensor  # (G,) the distinct group ids, ascending
    group_std: torch.Tensor  # (G,) unbiased in-group std of the scores (0 for a singleton group)
    group_kept: torch.Tensor  # (G,) bool


def select_groups_by_std(
    scores: torch.Tensor, group_ids: torch.Tensor, keep_ratio: float, mode: str = "std"
) -> GroupSelection:
    """StarPO-S uncertainty filter: keep the groups whose scores vary most (RAGEN, arXiv 2504.20073, §4.2).

    Keeps ``max(1, floor(keep_ratio * G))`` of the G groups ranked by in-group std of ``scores`` — highest first for
    ``std``, lowest first for ``std_rev`` (RAGEN ``rollout_filter_type``). ``keep_ratio = 1`` keeps everything.
    Ties (stds equal to 9 decimals) are broken by group id, smaller id first, so the choice is deterministic.

    Pass RAW episode returns (before group normalisation). RAGEN computed the std on the normalised scores; under
    ``mean_std`` normalisation every non-constant group then has std ~1, so its filter only separated zero-variance
    groups from the rest (ragen.md §10.6). RAGEN also keeps ``int(ratio * G)`` groups, which is 0 for small G.

    Args:
        scores: (N,) one raw return per trajectory.
        group_ids: (N,) integer env-group id per trajectory.
        keep_ratio: fraction of groups to keep, in (0, 1].
        mode: ``std`` or ``std_rev``.

    Returns:
        :class:`GroupSelection` with the (N,) keep mask and per-group stds for logging.
    """
    scores = _as_scores("scores", scores)
    _check_ids("group_ids", group_ids, scores.shape[0])
    if not 0 < keep_ratio <= 1:
        raise ValueError(f"keep_ratio must be in (0, 1], got {keep_ratio}")
    if mode not in ("std", "std_rev"):
        raise ValueError(f"mode must be 'std' or 'std_rev', got {mode!r}")
    uniq, inverse, _, _, std = _group_mean_std(scores, group_ids)
    num_groups = uniq.shape[0]
    num_keep = max(1, math.floor(keep_ratio * num_groups + 1e-9))
    # Stds equal to 9 decimals are ties (summation order can make equal stds differ in the last bits); uniq is
    # sorted ascending and a stable sort keeps that order among ties.
    key = torch.round(std.double(), decimals=9)
    order = torch.sort(-key if mode == "std" else key, stable=True).indices
    group_kept = torch.zeros(num_groups, dtype=torch.bool, device=scores.device)
    group_kept[order[:num_keep]] = True
    return GroupSelection(keep=group_kept[inverse], group_ids=uniq, group_std=std, group_kept=group_kept)


def gae_advantages(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
    next_values: torch.Tensor | None = None,
    next_advantages: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over the generated tokens only (Schulman et al., arXiv 1506.02438).

    The time axis is the sequence of masked-in positions of each row: observation tokens between assistant turns
    (mask holes) are skipped, so the last token of turn k bootstraps from the value of the first token of turn k+1::

        delta_t = r_t + gamma * V_next(t) - V_t        A_t = delta_t + gamma * lam * A_next(t)

    where ``next(t)`` is the next masked-in position of the row; past the last one, ``V`` and ``A`` are
    ``next_values`` / ``next_advantages`` (0 by default). A reward placed on a
    masked-out position counts as received right after the nearest generated token before it (added to that
    token's reward, undiscounted); rewards before a row's first generated token are ignored. This is verl's
    masked GAE (``compute_gae_advantage_return``) plus that reward carry. RAGEN's default (gamma = lam = 1,
    reward on the last token) gives ``A_t = R - V_t``. No whitening here: call
    :func:`trainers.algos.masked.masked_whiten` next, as RAGEN does.

    Args:
        token_rewards: (B, T) rewards per position.
        values: (B, T) critic values per position.
        mask: (B, T) bool or 0/1, the generated tokens.
        gamma: discount in [0, 1].
        lam: GAE lambda in [0, 1].
        next_values: (B,) value of the generated position that follows each row, or None for 0 (the row ends the
            episode). With one row per turn (step-level samples), pass the value and advantage at the first reply
            token of the episode's next turn, computing turns last to first: the result equals GAE over the whole
            episode as one row (see :func:`step_gae_advantages`).
        next_advantages: (B,) the GAE advantage at that position, or None for 0.

    Returns:
        ``(advantages, returns)``, both (B, T) without gradient, 0 at masked-out positions;
        ``returns = advantages + values`` (the critic's targets).
    """
    if not token_rewards.shape == values.shape == mask.shape or values.dim() != 2:
        raise ValueError(
            f"token_rewards {tuple(token_rewards.shape)}, values {tuple(values.shape)} and mask "
            f"{tuple(mask.shape)} must all be the same (B, T) shape"
        )
    if not (0 <= gamma <= 1 and 0 <= lam <= 1):
        raise ValueError(f"gamma and lam must be in [0, 1], got gamma={gamma}, lam={lam}")
    with torch.no_grad():
        m = mask.bool()
        token_rewards = token_rewards.to(values.dtype)
        zero = torch.zeros_like(values[:, 0])
        for name, boot in (("next_values", next_values), ("next_advantages", next_advantages)):
            if boot is not None and boot.shape != zero.shape:
                raise ValueError(f"{name} must have shape ({zero.shape[0]},), got {tuple(boot.shape)}")
        next_value = zero if next_values is None else next_values.to(values.dtype)
        last_gae = zero if next_advantages is None else next_advantages.to(values.dtype)
        pending = zero
        advantages = torch.zeros_like(values)
        for t in reversed(range(values.shape[1])):
            m_t = m[:, t]
            reward = token_rewards[:, t] + pending
            gae = reward + gamma * next_value - values[:, t] + gamma * lam * last_gae
            last_gae = torch.where(m_t, gae, last_gae)
            next_value = torch.where(m_t, values[:, t], next_value)
            pending = torch.where(m_t, zero, reward)
            advantages[:, t] = torch.where(m_t, gae, zero)
        returns = torch.where(m, advantages + values, torch.zeros_like(values))
    return advantages, returns


def step_gae_advantages(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    episode_ids: torch.Tensor,
    step_index: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over step-level samples: one row per turn, chained across the turns of each episode.

    Row ``(e, k)`` (turn k of episode e) bootstraps from the value and advantage at the first generated token of row
    ``(e, k')``, the episode's next turn present in the batch (the smallest ``k' > k``; none: the episode ended).
    The rows are processed from the last turn to the first, so every token gets the advantage it would get with the
    whole episode as one row under :func:`gae_advantages` (whose time axis skips observation tokens anyway).

    Args:
        token_rewards: (B, T) rewards per position (each turn's reward on its reply, in its own row).
        values: (B, T) critic values.
        mask: (B, T) the generated tokens of each row's turn; every row needs at least one.
        episode_ids: (B,) integer episode of each row.
        step_index: (B,) integer turn number of each row; unique within an episode.
        gamma: discount in [0, 1].
        lam: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)`` as :func:`gae_advantages`.
    """
    b = values.shape[0]
    _check_ids("episode_ids", episode_ids, b)
    _check_ids("step_index", step_index, b)
    m = mask.bool()
    if not bool(m.any(dim=1).all()):
        raise ValueError("every row needs at least one generated token")
    order, episode_sorted, _, _, _ = _episode_layout(episode_ids, step_index)  # raises on repeated (episode, step)
    nxt = torch.full((b,), -1, dtype=torch.long, device=values.device)  # row of the episode's next turn, -1: none
    same = episode_sorted[1:] == episode_sorted[:-1]
    nxt[order[:-1][same]] = order[1:][same]
    first = torch.argmax(m.int(), dim=1)  # first generated position of each row
    advantages = torch.zeros_like(values)
    returns = torch.zeros_like(values)
    rank = torch.zeros(b, dtype=torch.long, device=values.device)  # turns after this one, to schedule the rows
    for _ in range(b):
        later = torch.where(nxt >= 0, rank[nxt.clamp(min=0)] + 1, 0)
        if torch.equal(later, rank):
            break
        rank = later
    for r in range(int(rank.max()) + 1 if b else 0):
        rows = torch.nonzero(rank == r).squeeze(1)
        follow = nxt[rows]
        has = follow >= 0
        safe = follow.clamp(min=0)
        boot_v = torch.where(has, values[safe, first[safe]], 0.0)
        boot_a = torch.where(has, advantages[safe, first[safe]], 0.0)
        adv, ret = gae_advantages(token_rewards[rows], values[rows], m[rows], gamma, lam, boot_v, boot_a)
        advantages[rows], returns[rows] = adv, ret
    return advantages, returns


def _episode_layout(
    episode_ids: torch.Tensor, step_index: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int]:
    """Sort steps by (episode, step): returns order (S,), episode index of each sorted step (S,), rank of each
    sorted step within its episode (S,), the number of episodes and the longest episode length."""
    s = episode_ids.shape[0]
    _, inverse, counts = torch.unique(episode_ids, return_inverse=True, return_counts=True)
    within = torch.arange(s, device=episode_ids.device) if step_index is None else step_index
    order = torch.sort(within, stable=True).indices
    order = order[torch.sort(inverse[order], stable=True).indices]
    episode_sorted = inverse[order]
    if step_index is not None:
        step_sorted = step_index[order]
        dup = (episode_sorted[1:] == episode_sorted[:-1]) & (step_sorted[1:] == step_sorted[:-1])
        if bool(dup.any()):
            raise ValueError("step_index repeats a step within an episode (each (episode, step) pair must be unique)")
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(s, device=episode_ids.device) - starts[episode_sorted]
    return order, episode_sorted, rank, counts.shape[0], int(counts.max()) if s else 0


def discounted_returns(
    rewards: torch.Tensor, episode_ids: torch.Tensor, gamma: float, step_index: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-step discounted return ``R_t = r_t + gamma * R_{t+1}`` within each episode (GiGPO Eq. 5, arXiv 2505.10978).

    Steps may come in any order and episodes interleaved. Time order within an episode is ``step_index`` if given,
    otherwise the order of appearance in the arrays. Consecutive steps of an episode are one discount apart even if
    ``step_index`` has gaps.

    Args:
        rewards: (S,) reward of each step.
        episode_ids: (S,) integer episode id of each step.
        gamma: discount in [0, 1] (ROLL ``step_reward_gamma``).
        step_index: (S,) integer step number within the episode, or None.

    Returns:
        (S,) discounted return of each step, in the input order.
    """
    rewards = _as_scores("rewards", rewards)
    s = rewards.shape[0]
    _check_ids("episode_ids", episode_ids, s)
    if step_index is not None:
        _check_ids("step_index", step_index, s)
    if not 0 <= gamma <= 1:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    order, episode_sorted, rank, num_episodes, max_len = _episode_layout(episode_ids, step_index)
    padded = torch.zeros(num_episodes, max_len, dtype=rewards.dtype, device=rewards.device)
    padded[episode_sorted, rank] = rewards[order]
    running = torch.zeros(num_episodes, dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(padded.shape[1])):  # zero padding past an episode's end keeps running at 0
        running = padded[:, t] + gamma * running
        padded[:, t] = running
    out = torch.empty_like(rewards)
    out[order] = padded[episode_sorted, rank]
    return out


def state_ids_from_keys(keys: Sequence[Hashable]) -> torch.Tensor:
    """Map state keys (e.g. ``info["state_key"]`` strings) to integer ids: equal keys get equal ids.

    Exact equality by Python hashing, like verl-agent's ``to_hashable`` (ROLL hashes with SHA-256; same grouping).
    Ids number the distinct keys in order of first appearance.

    Args:
        keys: S hashable keys.

    Returns:
        (S,) int64 tensor.
    """
    table: dict[Hashable, int] = {}
    return torch.tensor([table.setdefault(k, len(table)) for k in keys], dtype=torch.int64)


class GiGPOAdvantages(NamedTuple):
    """Output of :func:`gigpo_advantages`; every field is (S,), one entry per step, in the input order."""

    advantages: torch.Tensor  # episode_reward_weight * episode_advantages + step_reward_weight * step_advantages
    episode_advantages: torch.Tensor  # A^E of the step's episode (Eq. 3)
    step_advantages: torch.Tensor  # A^S (Eq. 7)
    step_returns: torch.Tensor  # discounted return R_t (Eq. 5)
    anchor_ids: torch.Tensor  # int64 anchor-group index (Eq. 6): same (group id, state id) <=> same anchor id
    anchor_sizes: torch.Tensor  # int64 number of steps in the step's anchor group


def _per_episode(values: torch.Tensor, inverse: torch.Tensor, num: int, name: str) -> torch.Tensor:
    """One value per episode from per-step values that must be constant within each episode."""
    lo = values.new_zeros(num).scatter_reduce(0, inverse, values, "amin", include_self=False)
    hi = values.new_zeros(num).scatter_reduce(0, inverse, values, "amax", include_self=False)
    if bool((lo != hi).any()):
        raise ValueError(f"{name} must be the same for every step of an episode")
    return lo


def gigpo_advantages(
    step_rewards: torch.Tensor,
    group_ids: torch.Tensor,
    episode_ids: torch.Tensor,
    state_ids: torch.Tensor,
    step_index: torch.Tensor | None = None,
    episode_returns: torch.Tensor | None = None,
    step_reward_gamma: float = 0.95,
    method: str = "mean",
    episode_reward_weight: float = 1.0,
    step_reward_weight: float = 1.0,
    eps: float = 1e-6,
) -> GiGPOAdvantages:
    """GiGPO two-level advantage (Feng et al., "Group-in-Group Policy Optimization", arXiv 2505.10978).

    One row per env step (= one LLM turn). With ``norm`` = :func:`group_normalize` under ``method``:

    - Episode level (Eq. 3): ``A^E = norm(episode return)`` over the episodes of each env group, one value per
      episode (the paper's statistic; verl-agent and ROLL count one value per step row, so longer episodes weigh
      more there). The episode return is the undiscounted sum of its step rewards unless ``episode_returns`` is given.
    - Step level (Eq. 5-7): discounted step returns ``R_t`` (gamma = ``step_reward_gamma``) are normalised within
      anchor groups = steps with the same state id in the same env group. Identical states in different env groups
      are never pooled (as verl-agent; ROLL pools them batch-wide). A singleton anchor group gets ``A^S = 0``.
    - Combined (Eq. 8): ``A = episode_reward_weight * A^E + step_reward_weight * A^S`` (ROLL names; verl-agent has
      ``A^E + step_advantage_w * A^S``).

    A singleton env group gets ``A^E = 0`` (as ROLL; verl-agent gives the raw return). A zero-std group gets 0
    under ``mean_std``.

    Args:
        step_rewards: (S,) env reward of each step.
        group_ids: (S,) integer env-group id (episodes from the same initial state / seed).
        episode_ids: (S,) integer episode id; unique across the batch, not just within a group.
        state_ids: (S,) integer id of the state the step acted from (see :func:`state_ids_from_keys`).
        step_index: (S,) integer step number within the episode, or None for array order (see
            :func:`discounted_returns`).
        episode_returns: (S,) the return of each step's episode, or None to sum ``step_rewards`` per episode.
        step_reward_gamma: discount for the step returns, in [0, 1].
        method: ``mean`` / ``mean_std`` (ROLL ``reward_normalization.method``) or verl-agent's ``mean_norm`` /
            ``mean_std_norm``; used at both levels.
        episode_reward_weight: weight of ``A^E``.
        step_reward_weight: weight of ``A^S``.
        eps: as in :func:`group_normalize`.

    Returns:
        :class:`GiGPOAdvantages`, each field (S,).
    """
    step_rewards = _as_scores("step_rewards", step_rewards)
    s = step_rewards.shape[0]
    for name, ids in (("group_ids", group_ids), ("episode_ids", episode_ids), ("state_ids", state_ids)):
        _check_ids(name, ids, s)
    if method not in _GIGPO_METHODS:
        raise ValueError(f"method must be one of {sorted(_GIGPO_METHODS)}, got {method!r}")
    norm = _GIGPO_METHODS[method]

    episodes, ep_inverse = torch.unique(episode_ids, return_inverse=True)
    num_episodes = episodes.shape[0]
    ep_group = _per_episode(group_ids, ep_inverse, num_episodes, "group_ids")
    if episode_returns is None:
        ep_return = step_rewards.new_zeros(num_episodes).index_add_(0, ep_inverse, step_rewards)
    else:
        episode_returns = _as_scores("episode_returns", episode_returns)
        if episode_returns.shape != (s,):
            raise ValueError(f"episode_returns must have shape ({s},), got {tuple(episode_returns.shape)}")
        ep_return = _per_episode(episode_returns, ep_inverse, num_episodes, "episode_returns")
    episode_adv = group_normalize(ep_return, ep_group, norm, eps)[ep_inverse]

    step_returns = discounted_returns(step_rewards, episode_ids, step_reward_gamma, step_index)
    _, anchor_ids, anchor_counts = torch.unique(
        torch.stack([group_ids.long(), state_ids.long()], dim=1), dim=0, return_inverse=True, return_counts=True
    )
    step_adv = group_normalize(step_returns, anchor_ids, norm, eps)
    return GiGPOAdvantages(
        advantages=episode_reward_weight * episode_adv + step_reward_weight * step_adv,
        episode_advantages=episode_adv,
        step_advantages=step_adv,
        step_returns=step_returns,
        anchor_ids=anchor_ids,
        anchor_sizes=anchor_counts[anchor_ids],
    )


def turn_index_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """Number the turns of each row: each maximal run of masked-in positions is one assistant turn.

    Assumes two turns are always separated by at least one masked-out (observation) token; if the rollout's token
    view has explicit turn spans, build the (B, T) index from those instead.

    Args:
        mask: (B, T) bool or 0/1, the generated tokens.

    Returns:
        (B, T) int64: 0, 1, 2, ... for the tokens of the first, second, third turn of the row; -1 elsewhere.
    """
    if mask.dim() != 2:
        raise ValueError(f"mask must be (B, T), got shape {tuple(mask.shape)}")
    m = mask.bool()
    prev = torch.zeros_like(m)
    prev[:, 1:] = m[:, :-1]
    index = torch.cumsum((m & ~prev).long(), dim=1) - 1
    return torch.where(m, index, torch.full_like(index, -1))


def broadcast_turn_values(turn_values: torch.Tensor, turn_index: torch.Tensor) -> torch.Tensor:
    """Put one scalar per turn onto every token of that turn (verl-agent / ROLL token broadcast).

    For a per-sequence scalar (StarPO trajectory advantage, GiGPO step rows) use ``turn_values`` of shape (B, 1)
    with ``turn_index = turn_index_from_mask(mask).clamp(max=0)``, or simply ``values[:, None] * mask``.

    Args:
        turn_values: (B, K) value of turn k of row b; K >= 1 + the largest turn index.
        turn_index: (B, T) int turn number of each token, -1 for tokens of no turn (see :func:`turn_index_from_mask`).

    Returns:
        (B, T) with ``out[b, t] = turn_values[b, turn_index[b, t]]``, 0 where ``turn_index`` is -1.
    """
    if turn_values.dim() != 2 or turn_index.dim() != 2 or turn_values.shape[0] != turn_index.shape[0]:
        raise ValueError(
            f"turn_values {tuple(turn_values.shape)} must be (B, K) and turn_index {tuple(turn_index.shape)} (B, T)"
        )
    gathered = torch.gather(turn_values, 1, turn_index.long().clamp(min=0))
    return torch.where(turn_index >= 0, gathered, torch.zeros_like(gathered))


def clip_advantages(advantages: torch.Tensor, clip: float) -> torch.Tensor:
    """Clamp advantages to [-clip, clip] (ROLL ``advantage_clip``, applied after whitening).

    Args:
        advantages: (B, T) or any shape.
        clip: bound > 0.

    Returns:
        Same shape as ``advantages``.
    """
    if clip <= 0:
        raise ValueError(f"clip must be > 0, got {clip}")
    return advantages.clamp(-clip, clip)
