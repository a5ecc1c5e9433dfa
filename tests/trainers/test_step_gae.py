"""GAE over step-level rows (``step_gae_advantages`` and the bootstrap arguments of ``gae_advantages``) equals GAE
over the whole episode as one row."""

import pytest
import torch

from trainers.algos.advantages import gae_advantages, step_gae_advantages

F64 = torch.float64


def episode(gen: torch.Generator, turns: int, obs_len: int = 3, reply_len: int = 2):
    """One episode as a single row: (obs, reply) x turns; rewards on reply tokens, random values."""
    mask = torch.tensor(([0] * obs_len + [1] * reply_len) * turns, dtype=torch.bool)
    rewards = torch.where(mask, torch.randn(mask.shape, generator=gen, dtype=F64), 0.0)
    values = torch.randn(mask.shape, generator=gen, dtype=F64)
    return rewards, values, mask, obs_len + reply_len


def split_rows(rewards, values, mask, turn_len, turns, width):
    """Turn k's row: the episode prefix up to the end of reply k (full history), mask on reply k only; padded."""
    rows = []
    for k in range(turns):
        end = (k + 1) * turn_len
        m = torch.zeros(width, dtype=torch.bool)
        m[end - (turn_len - 3): end] = mask[end - (turn_len - 3): end]
        r = torch.zeros(width, dtype=F64)
        r[:end] = torch.where(m[:end], rewards[:end], 0.0)
        v = torch.zeros(width, dtype=F64)
        v[:end] = values[:end]
        rows.append((r, v, m, k))
    return rows


@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 1.0), (0.9, 0.8), (0.5, 0.0)])
def test_step_rows_match_the_whole_episode(gamma, lam):
    gen = torch.Generator().manual_seed(0)
    lengths = [4, 1, 3]
    width = max(lengths) * 5
    full, rows = [], []
    for e, turns in enumerate(lengths):
        r, v, m, turn_len = episode(gen, turns)
        adv, ret = gae_advantages(r[None], v[None], m[None], gamma, lam)
        full.append((adv[0], ret[0], turn_len))
        rows += [(e, *row) for row in split_rows(r, v, m, turn_len, turns, width)]
    order = torch.randperm(len(rows), generator=gen).tolist()  # rows in any order
    rows = [rows[i] for i in order]
    stack = lambda i: torch.stack([row[i] for row in rows])  # noqa: E731
    episode_ids = torch.tensor([row[0] for row in rows])
    step_index = torch.tensor([10 * row[4] for row in rows])  # gaps in the step numbers are fine
    adv, ret = step_gae_advantages(stack(1), stack(2), stack(3), episode_ids, step_index, gamma, lam)
    for i, (e, _, _, m, k) in enumerate(rows):
        full_adv, full_ret, turn_len = full[e]
        end = (k + 1) * turn_len
        torch.testing.assert_close(adv[i][m], full_adv[:end][m[:end]])
        torch.testing.assert_close(ret[i][m], full_ret[:end][m[:end]])
        assert bool((adv[i][~m] == 0).all())


def test_bootstrap_by_hand():
    # one row, two generated tokens, reward 1 on the last; the next turn starts with V = 2 and A = 0.5
    rewards = torch.tensor([[0.0, 1.0]], dtype=F64)
    values = torch.tensor([[0.5, 0.25]], dtype=F64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    adv, _ = gae_advantages(rewards, values, mask, 0.9, 0.8, torch.tensor([2.0], dtype=F64),
                            torch.tensor([0.5], dtype=F64))
    last = 1.0 + 0.9 * 2.0 - 0.25 + 0.9 * 0.8 * 0.5  # 2.91
    first = 0.0 + 0.9 * 0.25 - 0.5 + 0.9 * 0.8 * last
    torch.testing.assert_close(adv, torch.tensor([[first, last]], dtype=F64))


def test_rows_without_generated_tokens_and_repeated_steps_are_errors():
    r = torch.zeros(2, 3, dtype=F64)
    with pytest.raises(ValueError, match="at least one generated token"):
        step_gae_advantages(r, r, torch.tensor([[1, 0, 0], [0, 0, 0]]), torch.tensor([0, 0]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="repeats a step"):
        step_gae_advantages(r, r, torch.ones(2, 3), torch.tensor([0, 0]), torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="next_values must have shape"):
        gae_advantages(r, r, torch.ones(2, 3), next_values=torch.zeros(3, dtype=F64))
