"""Hand-checked values and loop references for trainers.algos.advantages."""

import math
import random
import statistics
from collections import defaultdict
from fractions import Fraction

import pytest
import torch

from trainers.algos.advantages import (
    broadcast_turn_values,
    clip_advantages,
    discounted_returns,
    gae_advantages,
    gigpo_advantages,
    group_normalize,
    select_groups_by_std,
    state_ids_from_keys,
    turn_index_from_mask,
)

F64 = torch.float64


def t(*values):
    return torch.tensor(values, dtype=F64)


def ids(*values):
    return torch.tensor(values, dtype=torch.int64)


# ---------------------------------------------------------------- group_normalize

# groups: 7 -> {1, 3} (mean 2, std sqrt 2), 3 -> {2, 2} (std 0), 9 -> {5} (singleton)
SCORES = t(1.0, 3.0, 2.0, 2.0, 5.0)
GROUPS = ids(7, 7, 3, 3, 9)


def test_group_normalize_hand_values():
    torch.testing.assert_close(group_normalize(SCORES, GROUPS, "identity"), SCORES)
    torch.testing.assert_close(group_normalize(SCORES, GROUPS, "mean"), t(-1.0, 1.0, 0.0, 0.0, 0.0))
    s = math.sqrt(2) + 1e-6
    # zero-std group -> 0 (not NaN), singleton -> 0
    torch.testing.assert_close(group_normalize(SCORES, GROUPS, "mean_std"), t(-1 / s, 1 / s, 0.0, 0.0, 0.0))


def test_group_normalize_batch_grouping_and_int_scores():
    # all-zero ids = whole batch: mean 2.6
    out = group_normalize(SCORES, torch.zeros(5, dtype=torch.int64), "mean")
    torch.testing.assert_close(out, SCORES - 2.6)
    out_int = group_normalize(torch.tensor([0, 1, 1, 0]), ids(0, 0, 1, 1), "mean")
    assert out_int.dtype.is_floating_point
    torch.testing.assert_close(out_int, torch.tensor([-0.5, 0.5, 0.5, -0.5]))


def test_group_normalize_errors():
    with pytest.raises(ValueError, match="method"):
        group_normalize(SCORES, GROUPS, "asym_clip")
    with pytest.raises(ValueError, match="group_ids"):
        group_normalize(SCORES, GROUPS[:4])
    with pytest.raises(ValueError, match="group_ids"):
        group_normalize(SCORES, GROUPS.double())
    with pytest.raises(ValueError, match="scores"):
        group_normalize(SCORES[None], GROUPS)


def _normalize_loop(scores, groups, method, eps=1e-6):
    members = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    out = [0.0] * len(scores)
    for idx in members.values():
        vals = [scores[i] for i in idx]
        mean = statistics.fmean(vals)
        std = statistics.stdev(vals) if len(vals) > 1 else 0.0
        for i in idx:
            if method == "identity":
                out[i] = scores[i]
            elif method == "mean":
                out[i] = scores[i] - mean
            else:
                out[i] = (scores[i] - mean) / (std + eps) if std > eps else 0.0
    return out


@pytest.mark.parametrize("method", ["identity", "mean", "mean_std"])
def test_group_normalize_matches_loop_reference(method):
    for seed in range(20):
        rng = random.Random(seed)
        n = rng.randint(1, 40)
        groups = [rng.choice([-3, 0, 2, 5, 11, 40]) for _ in range(n)]
        # mix of continuous and tied (constant-group) scores
        scores = [rng.choice([0.0, 1.0]) if rng.random() < 0.5 else rng.gauss(0, 2) for _ in range(n)]
        out = group_normalize(t(*scores), ids(*groups), method)
        torch.testing.assert_close(out, t(*_normalize_loop(scores, groups, method)))
        assert torch.isfinite(out).all()


# ---------------------------------------------------------------- select_groups_by_std

# group 10: {1, 1} std 0; 20: {0, 2} std 1.414; 30: {0, 1} std 0.707; 40: {0, 4} std 2.828
FILTER_SCORES = t(1.0, 0.0, 0.0, 4.0, 1.0, 2.0, 1.0, 0.0)
FILTER_GROUPS = ids(10, 30, 40, 40, 10, 20, 30, 20)


def test_select_groups_by_std_hand_values():
    sel = select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.5, mode="std")
    assert sel.group_ids.tolist() == [10, 20, 30, 40]
    torch.testing.assert_close(sel.group_std, t(0.0, math.sqrt(2), math.sqrt(0.5), math.sqrt(8)))
    assert sel.group_kept.tolist() == [False, True, False, True]  # top-2: 40, 20
    assert sel.keep.tolist() == [False, False, True, True, False, True, False, True]
    rev = select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.5, mode="std_rev")
    assert rev.group_kept.tolist() == [True, False, True, False]  # lowest-2: 10, 30
    one = select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.25)
    assert one.group_kept.tolist() == [False, False, False, True]
    # int(0.1 * 4) = 0 groups in RAGEN; we keep at least one
    assert select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.1).group_kept.sum().item() == 1
    assert select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=1.0).keep.all()


def test_select_groups_ties_broken_by_group_id():
    # groups 5 and 2 both have std sqrt(2); group 5 comes first in the arrays, group 2 must win
    scores = t(0.0, 2.0, 3.0, 5.0, 1.0, 1.0)
    groups = ids(5, 5, 2, 2, 8, 8)
    sel = select_groups_by_std(scores, groups, keep_ratio=1 / 3)
    assert sel.group_ids.tolist() == [2, 5, 8]
    assert sel.group_kept.tolist() == [True, False, False]
    # with std_rev the constant group 8 is first; asking for two then takes the lower-id of the tied pair
    rev = select_groups_by_std(scores, groups, keep_ratio=2 / 3, mode="std_rev")
    assert rev.group_kept.tolist() == [True, False, True]


def test_filter_on_normalised_scores_is_degenerate():
    # Why the filter reads raw returns (ragen.md §10.6): after mean_std normalisation every non-constant group has
    # std 1, so the ranking between groups 20, 30 and 40 is lost.
    normed = group_normalize(FILTER_SCORES, FILTER_GROUPS, "mean_std", eps=0.0)
    sel = select_groups_by_std(normed, FILTER_GROUPS, keep_ratio=1.0)
    torch.testing.assert_close(sel.group_std, t(0.0, 1.0, 1.0, 1.0))


def test_select_groups_errors():
    with pytest.raises(ValueError, match="keep_ratio"):
        select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.0)
    with pytest.raises(ValueError, match="mode"):
        select_groups_by_std(FILTER_SCORES, FILTER_GROUPS, keep_ratio=0.5, mode="max_mean")


def exact_group_variances(scores, groups) -> dict:
    """Group id -> the sample variance of its members' scores, as an exact fraction (exact ties; 0 for one member):
    the written-out reference the group filters are tested against."""
    members = defaultdict(list)
    for s, g in zip(scores, groups, strict=True):
        members[g].append(Fraction(s))
    variances = {}
    for g, vals in members.items():
        mean = sum(vals) / len(vals)
        variances[g] = sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else Fraction(0)
    return variances


def _select_loop(scores, groups, keep_ratio, mode):
    variances = exact_group_variances(scores, groups)
    sign = -1 if mode == "std" else 1
    ranked = sorted(variances, key=lambda g: (sign * variances[g], g))
    kept = set(ranked[: max(1, math.floor(keep_ratio * len(variances) + 1e-9))])
    return [g in kept for g in groups]


@pytest.mark.parametrize("mode", ["std", "std_rev"])
def test_select_groups_matches_loop_reference(mode):
    for seed in range(30):
        rng = random.Random(seed)
        num_groups, group_size = rng.randint(1, 12), rng.randint(1, 6)
        group_names = rng.sample(range(100), num_groups)
        groups = [g for g in group_names for _ in range(group_size)]
        rng.shuffle(groups)
        scores = [rng.randint(0, 2) for _ in groups]  # small integers: many exactly tied stds
        ratio = rng.choice([0.1, 0.25, 0.5, 0.75, 1.0])
        sel = select_groups_by_std(t(*scores), ids(*groups), ratio, mode)
        assert sel.keep.tolist() == _select_loop(scores, groups, ratio, mode), (seed, ratio)


# ---------------------------------------------------------------- GAE


def test_gae_hand_values_no_holes():
    # gamma .9, lam .8, rewards [0, 0, 1], values [.5, .6, .7]
    # t2: delta = 1 - .7 = .3                  A = .3
    # t1: delta = .9*.7 - .6 = .03              A = .03 + .72*.3 = .246
    # t0: delta = .9*.6 - .5 = .04              A = .04 + .72*.246 = .21712
    adv, ret = gae_advantages(t([0.0, 0.0, 1.0]), t([0.5, 0.6, 0.7]), torch.ones(1, 3, dtype=torch.bool), 0.9, 0.8)
    torch.testing.assert_close(adv, t([0.21712, 0.246, 0.3]))
    torch.testing.assert_close(ret, t([0.71712, 0.846, 1.0]))


# Two turns: generated positions 0,1 and 4,5; positions 2,3 are an observation (values there are garbage).
HOLE_MASK = torch.tensor([[1, 1, 0, 0, 1, 1]], dtype=torch.bool)
HOLE_VALUES = t([0.5, 0.6, 9.0, -9.0, 0.7, 0.8])
# Over the generated tokens only: r = [0, .5, 0, 1], V = [.5, .6, .7, .8], gamma .9, lam .8
#   pos5: delta = 1 - .8 = .2                        A = .2
#   pos4: delta = .9*.8 - .7 = .02                   A = .02 + .72*.2 = .164
#   pos1: delta = .5 + .9*.7 - .6 = .53  (bootstraps from pos4, skipping the hole)
#                                                    A = .53 + .72*.164 = .64808
#   pos0: delta = .9*.6 - .5 = .04                   A = .04 + .72*.64808 = .5066176
HOLE_ADV = t([0.5066176, 0.64808, 0.0, 0.0, 0.164, 0.2])
HOLE_RET = t([1.0066176, 1.24808, 0.0, 0.0, 0.864, 1.0])


def test_gae_skips_mask_holes():
    rewards = t([0.0, 0.5, 0.0, 0.0, 0.0, 1.0])
    adv, ret = gae_advantages(rewards, HOLE_VALUES, HOLE_MASK, 0.9, 0.8)
    torch.testing.assert_close(adv, HOLE_ADV)
    torch.testing.assert_close(ret, HOLE_RET)


def test_gae_reward_on_observation_token_is_credited_to_previous_turn():
    # the turn-1 reward sits on the observation ("Reward: 0.5") at position 3; the final reward after the last
    # generated token; a reward before the first generated token is ignored
    mask = torch.tensor([[0, 1, 1, 0, 0, 1, 1, 0]], dtype=torch.bool)
    rewards = t([7.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 1.0])
    values = t([3.0, 0.5, 0.6, 9.0, -9.0, 0.7, 0.8, 5.0])
    adv, ret = gae_advantages(rewards, values, mask, 0.9, 0.8)
    torch.testing.assert_close(adv[:, 1:7], HOLE_ADV)
    torch.testing.assert_close(ret[:, 1:7], HOLE_RET)
    assert adv[0, 0].item() == adv[0, 7].item() == 0.0


def test_gae_gamma_lam_one_is_return_minus_value():
    # RAGEN default: gamma = lam = 1, reward R on the last token -> A_t = R - V_t
    values = t([0.1, 0.2, 0.3, 0.4])
    mask = torch.tensor([[1, 0, 1, 1]], dtype=torch.bool)
    adv, ret = gae_advantages(t([0.0, 0.0, 0.0, 2.0]), values, mask, 1.0, 1.0)
    torch.testing.assert_close(adv, t([1.9, 0.0, 1.7, 1.6]))
    torch.testing.assert_close(ret, t([2.0, 0.0, 2.0, 2.0]))


def _gae_loop(rewards, values, mask, gamma, lam):
    """Textbook GAE on the list of generated positions; off-mask rewards go to the previous generated token."""
    out = [0.0] * len(rewards)
    positions, carried = [], []
    for i, m in enumerate(mask):
        if m:
            positions.append(i)
            carried.append(rewards[i])
        elif positions:
            carried[-1] += rewards[i]
    gae = 0.0
    for k in reversed(range(len(positions))):
        next_value = values[positions[k + 1]] if k + 1 < len(positions) else 0.0
        delta = carried[k] + gamma * next_value - values[positions[k]]
        gae = delta + gamma * lam * gae
        out[positions[k]] = gae
    return out


def test_gae_matches_loop_reference():
    for seed in range(25):
        rng = random.Random(seed)
        b, seq = rng.randint(1, 5), rng.randint(1, 30)
        gamma, lam = rng.choice([1.0, 0.99, 0.9, 0.5, 0.0]), rng.choice([1.0, 0.95, 0.5, 0.0])
        mask = [[rng.random() < 0.6 for _ in range(seq)] for _ in range(b)]
        if b > 1:
            mask[-1] = [False] * seq  # a row with no generated tokens
        rewards = [[rng.gauss(0, 1) if rng.random() < 0.3 else 0.0 for _ in range(seq)] for _ in range(b)]
        values = [[rng.gauss(0, 1) for _ in range(seq)] for _ in range(b)]
        adv, ret = gae_advantages(t(*rewards), t(*values), torch.tensor(mask), gamma, lam)
        expected = [_gae_loop(r, v, m, gamma, lam) for r, v, m in zip(rewards, values, mask, strict=True)]
        torch.testing.assert_close(adv, t(*expected))
        expected_ret = [
            [a + v if m else 0.0 for a, v, m in zip(*row, strict=True)]
            for row in zip(expected, values, mask, strict=True)
        ]
        torch.testing.assert_close(ret, t(*expected_ret))


def test_gae_errors_and_no_grad():
    values = t([0.5, 0.6]).requires_grad_(True)
    adv, ret = gae_advantages(t([0.0, 1.0]), values, torch.ones(1, 2, dtype=torch.bool))
    assert not adv.requires_grad and not ret.requires_grad
    with pytest.raises(ValueError, match="shape"):
        gae_advantages(t([0.0]), values, torch.ones(1, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="gamma"):
        gae_advantages(t([0.0, 1.0]), values, torch.ones(1, 2, dtype=torch.bool), gamma=1.5)


# ---------------------------------------------------------------- discounted returns


def test_discounted_returns_hand_values_any_order():
    # rows shuffled and interleaved, time order given by step numbers; gamma .5
    rewards = t(1.0, 1.0, 0.0, 0.0, 1.0)
    episodes = ids(9, 4, 4, 9, 4)
    steps = ids(1, 2, 1, 0, 0)
    # episode 4 = rows 4, 2, 1 (steps 0, 1, 2): rewards [1, 0, 1] -> [1 + .5*0 + .25*1, 0 + .5*1, 1] = [1.25, .5, 1]
    # episode 9 = rows 3, 0 (steps 0, 1): rewards [0, 1] -> [.5, 1]
    out = discounted_returns(rewards, episodes, 0.5, steps)
    torch.testing.assert_close(out, t(1.0, 1.0, 0.5, 0.5, 1.25))
    # without step_index the array order is the time order
    torch.testing.assert_close(
        discounted_returns(t(0.0, 0.0, 1.0, 1.0, 1.0), ids(4, 4, 4, 9, 9), 0.5), t(0.25, 0.5, 1.0, 1.5, 1.0)
    )


def test_discounted_returns_gamma_edges_and_errors():
    rewards, episodes = t(1.0, 2.0, 3.0), ids(0, 0, 0)
    torch.testing.assert_close(discounted_returns(rewards, episodes, 0.0), rewards)
    torch.testing.assert_close(discounted_returns(rewards, episodes, 1.0), t(6.0, 5.0, 3.0))
    with pytest.raises(ValueError, match="step_index"):
        discounted_returns(rewards, episodes, 0.9, ids(0, 1, 1))
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(rewards, episodes, -0.1)
    assert discounted_returns(t(), ids(), 0.9).shape == (0,)


# ---------------------------------------------------------------- GiGPO

# Hand-made batch, gamma .5, two env groups that both contain observations "A" and "B".
#   group 0: e0 = [A r0, B r1] (return 1; step returns [.5, 1]); e1 = [A r0, C r0] (return 0; [0, 0])
#   group 1: e2 = [A r1]       (return 1; [1]);                   e3 = [A r0, B r0] (return 0; [0, 0])
# A^E (mean): group 0 mean .5 -> e0 +.5, e1 -.5; group 1 the same -> e2 +.5, e3 -.5
# anchors (within groups only): (0,A) {.5, 0} -> +.25, -.25; (0,B), (0,C), (1,B) singletons -> 0;
#   (1,A) {1, 0} -> +.5, -.5.  Pooled across groups, A and B would give other (non-zero) values.
GIGPO_ROWS = [  # (group, episode, step, state, reward)
    (0, 0, 0, "A", 0.0),
    (0, 0, 1, "B", 1.0),
    (0, 1, 0, "A", 0.0),
    (0, 1, 1, "C", 0.0),
    (1, 2, 0, "A", 1.0),
    (1, 3, 0, "A", 0.0),
    (1, 3, 1, "B", 0.0),
]


def _gigpo_inputs(rows):
    groups, episodes, steps, states, rewards = zip(*rows, strict=True)
    return t(*rewards), ids(*groups), ids(*episodes), state_ids_from_keys(states), ids(*steps)


def test_gigpo_hand_values_mean():
    rewards, groups, episodes, states, steps = _gigpo_inputs(GIGPO_ROWS)
    out = gigpo_advantages(rewards, groups, episodes, states, steps, step_reward_gamma=0.5, method="mean")
    torch.testing.assert_close(out.step_returns, t(0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
    torch.testing.assert_close(out.episode_advantages, t(0.5, 0.5, -0.5, -0.5, 0.5, -0.5, -0.5))
    torch.testing.assert_close(out.step_advantages, t(0.25, 0.0, -0.25, 0.0, 0.5, -0.5, 0.0))
    torch.testing.assert_close(out.advantages, t(0.75, 0.5, -0.75, -0.5, 1.0, -1.0, -0.5))
    assert out.anchor_sizes.tolist() == [2, 1, 2, 1, 2, 2, 1]
    # (0, A) and (1, A) are different anchors; (0, B) and (1, B) too
    a = out.anchor_ids.tolist()
    assert a[0] == a[2] and a[4] == a[5] and a[0] != a[4] and a[1] != a[6]


def test_gigpo_hand_values_mean_std_and_weights():
    rewards, groups, episodes, states, steps = _gigpo_inputs(GIGPO_ROWS)
    out = gigpo_advantages(
        rewards,
        groups,
        episodes,
        states,
        steps,
        step_reward_gamma=0.5,
        method="mean_std_norm",
        episode_reward_weight=2.0,
        step_reward_weight=0.5,
    )

    # every non-singleton group here is a pair {x, x + d}: |x - mean| = d / 2, unbiased std = d / sqrt(2),
    # so the z-score is +-(d / 2) / (d / sqrt(2) + eps), about +-0.7071
    def z(d):
        return (d / 2) / (d / math.sqrt(2) + 1e-6)

    ep = t(z(1), z(1), -z(1), -z(1), z(1), -z(1), -z(1))  # both env groups: returns {1, 0}
    st = t(z(0.5), 0.0, -z(0.5), 0.0, z(1), -z(1), 0.0)  # (0, A): {.5, 0}; (1, A): {1, 0}
    torch.testing.assert_close(out.episode_advantages, ep)
    torch.testing.assert_close(out.step_advantages, st)
    torch.testing.assert_close(out.advantages, 2.0 * ep + 0.5 * st)


def test_gigpo_is_row_order_independent():
    rewards, groups, episodes, states, steps = _gigpo_inputs(GIGPO_ROWS)
    base = gigpo_advantages(rewards, groups, episodes, states, steps, step_reward_gamma=0.5)
    perm = torch.tensor([6, 2, 4, 0, 5, 1, 3])
    out = gigpo_advantages(
        rewards[perm], groups[perm], episodes[perm], states[perm], steps[perm], step_reward_gamma=0.5
    )
    for name in ("advantages", "episode_advantages", "step_advantages", "step_returns", "anchor_sizes"):
        torch.testing.assert_close(getattr(out, name), getattr(base, name)[perm])


def test_gigpo_singleton_groups_and_episode_returns():
    # one env group holding one episode: A^E = 0 (ROLL; verl-agent would give the raw return); all anchors singleton
    out = gigpo_advantages(t(1.0, 2.0), ids(0, 0), ids(5, 5), ids(0, 1))
    torch.testing.assert_close(out.advantages, t(0.0, 0.0))
    # passed episode returns override the sum of step rewards
    rewards, groups, episodes, states, steps = _gigpo_inputs(GIGPO_ROWS)
    returns = t(3.0, 3.0, 1.0, 1.0, 0.0, 0.0, 0.0)  # e0 3, e1 1, e2 0, e3 0
    out = gigpo_advantages(rewards, groups, episodes, states, steps, episode_returns=returns, step_reward_gamma=0.5)
    torch.testing.assert_close(out.episode_advantages, t(1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 0.0))


def test_gigpo_errors():
    rewards, groups, episodes, states, steps = _gigpo_inputs(GIGPO_ROWS)
    with pytest.raises(ValueError, match="group_ids"):  # episode 0 split across two groups
        gigpo_advantages(rewards, ids(0, 1, 0, 0, 1, 1, 1), episodes, states, steps)
    with pytest.raises(ValueError, match="episode_returns"):
        gigpo_advantages(rewards, groups, episodes, states, steps, episode_returns=t(1, 2, 0, 0, 1, 0, 0))
    with pytest.raises(ValueError, match="method"):
        gigpo_advantages(rewards, groups, episodes, states, steps, method="identity")
    with pytest.raises(ValueError, match="state_ids"):
        gigpo_advantages(rewards, groups, episodes, states[:3], steps)


def _gigpo_loop(rows, gamma, method, w_ep, w_st, eps=1e-6):
    """Plain-Python GiGPO: rows are (group, episode, step, state, reward) in any order."""
    by_episode = defaultdict(list)
    for i, (_, e, s, _, _) in enumerate(rows):
        by_episode[e].append((s, i))
    step_return = [0.0] * len(rows)
    ep_return, ep_group = {}, {}
    for e, members in by_episode.items():
        running = 0.0
        for _, i in sorted(members, reverse=True):
            running = rows[i][4] + gamma * running
            step_return[i] = running
        ep_return[e] = sum(rows[i][4] for _, i in members)
        ep_group[e] = rows[members[0][1]][0]
    episodes = list(ep_return)
    norm = "mean" if method == "mean" else "mean_std"
    ep_adv = dict(
        zip(
            episodes,
            _normalize_loop([ep_return[e] for e in episodes], [ep_group[e] for e in episodes], norm, eps),
            strict=True,
        )
    )
    anchors = [(g, state) for g, _, _, state, _ in rows]
    st_adv = _normalize_loop(step_return, anchors, norm, eps)
    return [w_ep * ep_adv[rows[i][1]] + w_st * st_adv[i] for i in range(len(rows))], step_return


@pytest.mark.parametrize("method", ["mean", "mean_std"])
def test_gigpo_matches_loop_reference(method):
    for seed in range(25):
        rng = random.Random(seed)
        num_states = rng.randint(1, 6)  # few states: anchors collide within and across groups
        rows, episode = [], 0
        for group in rng.sample(range(50), rng.randint(1, 5)):
            for _ in range(rng.randint(1, 6)):
                steps = sorted(rng.sample(range(20), rng.randint(1, 6)))  # step numbers with gaps
                for step in steps:
                    reward = rng.choice([0.0, 0.0, 1.0, -0.1, rng.gauss(0, 1)])
                    rows.append((group, episode * 7 + 3, step, f"s{rng.randrange(num_states)}", reward))
                episode += 1
        rng.shuffle(rows)
        gamma = rng.choice([1.0, 0.95, 0.5])
        w_ep, w_st = rng.choice([(1.0, 1.0), (0.5, 2.0)])
        expected, expected_returns = _gigpo_loop(rows, gamma, method, w_ep, w_st)
        rewards, groups, episodes, states, steps = _gigpo_inputs(rows)
        out = gigpo_advantages(
            rewards,
            groups,
            episodes,
            states,
            steps,
            step_reward_gamma=gamma,
            method=method,
            episode_reward_weight=w_ep,
            step_reward_weight=w_st,
        )
        torch.testing.assert_close(out.step_returns, t(*expected_returns))
        torch.testing.assert_close(out.advantages, t(*expected))


def test_state_ids_from_keys():
    assert state_ids_from_keys(["a", "b", "a", ("x", 1), "b"]).tolist() == [0, 1, 0, 2, 1]
    assert state_ids_from_keys([]).shape == (0,)


# ---------------------------------------------------------------- token broadcast, clipping


def test_turn_index_and_broadcast():
    mask = torch.tensor([[0, 1, 1, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
    index = turn_index_from_mask(mask)
    assert index.tolist() == [[-1, 0, 0, -1, -1, 1, -1, 2], [-1] * 8, [0] * 8]
    values = t([10.0, 20.0, 30.0], [1.0, 2.0, 3.0], [-1.0, 0.0, 0.0])
    out = broadcast_turn_values(values, index)
    torch.testing.assert_close(out, t([0, 10, 10, 0, 0, 20, 0, 30], [0] * 8, [-1] * 8))
    # per-sequence scalar via K = 1
    seq = broadcast_turn_values(t([5.0], [6.0], [7.0]), index.clamp(max=0))
    torch.testing.assert_close(seq, t([5.0], [6.0], [7.0]) * mask)
    with pytest.raises(ValueError, match="turn_values"):
        broadcast_turn_values(t(1.0, 2.0)[0], index)


def test_clip_advantages():
    torch.testing.assert_close(clip_advantages(t(-3.0, 0.5, 3.0), 1.0), t(-1.0, 0.5, 1.0))
    with pytest.raises(ValueError, match="clip"):
        clip_advantages(t(1.0), 0.0)
