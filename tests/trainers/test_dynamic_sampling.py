"""Signal-aware sampling (trainers/rl/dynamic_sampling.py, ``dynamic_sampling``): the selection against RAGEN-2's and
DAPO's definitions on hand-made rewards, the bounded refill, the seed layout, the config checks, a tiny real run."""

import math
import random

import pytest
import torch

from tests.trainers.conftest import tiny_config_dict
from tests.trainers.test_advantages import exact_group_variances
from trainers.rl.config import ConfigError, config_from_dict, load_config
from trainers.rl.dynamic_sampling import (
    INFORMATIVE_EPS,
    count_informative,
    fill_pool,
    pool_round_index,
    select_pool_groups,
)
from trainers.rl.presets import STARPO, STARPO_SNR


def t(*values):
    return torch.tensor(values, dtype=torch.float32)


def ids(*values):
    return torch.tensor(values, dtype=torch.int64)


def kept_ids(selection):
    return selection.group_ids[selection.group_kept].tolist()


# ---------------------------------------------------------------- selection on hand-made rewards

# 6 groups of 4 binary rewards (DAPO's accuracy), ids in sampling order:
#   0: 0000 (acc 0, std 0)   1: 1100 (std .577)   2: 1111 (acc 1, std 0)
#   3: 1000 (std .5)         4: 0000 (std 0)      5: 1110 (std .5)
BINARY = [[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]


def flat(groups, order=None):
    """(scores, group ids) of per-group reward lists, the members interleaved in ``order`` (default: group-major)."""
    pairs = [(r, g) for g, rewards in enumerate(groups) for r in rewards]
    if order is not None:
        pairs = [pairs[i] for i in order]
    return t(*[r for r, _ in pairs]), ids(*[g for _, g in pairs])


def test_informative_means_rewards_not_all_equal():
    scores, groups = flat(BINARY)
    selection = select_pool_groups(scores, groups, 3)
    # DAPO's constraint: 0 < |correct| < G  <=>  the group's rewards are not all equal  <=>  std > 0
    assert selection.informative.tolist() == [0 < sum(r) < len(r) for r in BINARY]
    assert count_informative(scores, groups) == 3
    torch.testing.assert_close(selection.group_std[[1, 3, 5]], t(math.sqrt(1 / 3), 0.5, 0.5))


def test_top_std_keeps_the_largest_spread_and_never_a_zero_variance_group():
    scores, groups = flat(BINARY)
    assert kept_ids(select_pool_groups(scores, groups, 1, "top_std")) == [1]  # std .577 beats .5
    # groups 3 and 5 tie at std .5: the earlier-played (smaller id) wins, whatever the member order
    assert kept_ids(select_pool_groups(scores, groups, 2, "top_std")) == [1, 3]
    shuffled = list(range(24))
    random.Random(0).shuffle(shuffled)
    assert kept_ids(select_pool_groups(*flat(BINARY, shuffled), 2, "top_std")) == [1, 3]
    three = select_pool_groups(scores, groups, 3, "top_std")
    assert kept_ids(three) == [1, 3, 5] and bool(three.informative[three.group_kept].all())
    assert three.keep.tolist() == [g in (1, 3, 5) for g in groups.tolist()]


def test_first_nonzero_keeps_the_first_informative_groups_played():
    scores, groups = flat(BINARY)
    # DAPO: drop the all-0 / all-1 groups and fill the batch in play order: 1 and 3, the first two informative ones
    assert kept_ids(select_pool_groups(scores, groups, 2, "first_nonzero")) == [1, 3]
    reordered = [BINARY[i] for i in (0, 5, 2, 3, 4, 1)]  # now the std .5 group comes first
    assert kept_ids(select_pool_groups(*flat(reordered), 2, "first_nonzero")) == [1, 3]
    assert kept_ids(select_pool_groups(*flat(reordered), 1, "top_std")) == [5]


@pytest.mark.parametrize("rule", ["top_std", "first_nonzero"])
def test_too_few_informative_groups_fill_with_zero_variance_leftovers_in_play_order(rule):
    scores, groups = flat(BINARY)
    selection = select_pool_groups(scores, groups, 5, rule)
    assert kept_ids(selection) == [0, 1, 2, 3, 5]  # the 3 informative ones, then zero-variance 0 and 2 (not 4)
    assert int((selection.group_kept & ~selection.informative).sum()) == 2
    assert select_pool_groups(scores, groups, 6, rule).keep.all()


def test_a_spread_below_the_advantage_floor_is_not_informative():
    # std 5e-7 <= 1e-6: group_normalize gives these members advantage 0, so the group carries no signal
    scores = t(1.0, 1.0 + 1e-6, 0.0, 1.0)
    groups = ids(0, 0, 1, 1)
    selection = select_pool_groups(scores, groups, 1)
    assert float(selection.group_std[0]) < INFORMATIVE_EPS
    assert selection.informative.tolist() == [False, True] and kept_ids(selection) == [1]


def test_selection_errors():
    scores, groups = flat(BINARY)
    for num_keep in (0, 7):
        with pytest.raises(ValueError, match="num_keep"):
            select_pool_groups(scores, groups, num_keep)
    with pytest.raises(ValueError, match="rule"):
        select_pool_groups(scores, groups, 2, "max_mean")
    with pytest.raises(ValueError, match="shape"):
        select_pool_groups(scores, groups[:-1], 2)


def _reference(scores, groups, num_keep, rule):
    """The definitions written out with exact rational variances: informative groups first (by variance, largest
    first, for top_std; in play order for first_nonzero), ties and zero-variance groups in play (id) order."""
    variance = exact_group_variances(scores, groups)
    informative = sorted((g for g in variance if variance[g] > 0),
                         key=lambda g: (-variance[g] if rule == "top_std" else 0, g))
    rest = sorted(g for g in variance if variance[g] == 0)
    kept = set((informative + rest)[:num_keep])
    return [g in kept for g in groups]


@pytest.mark.parametrize("rule", ["top_std", "first_nonzero"])
def test_selection_matches_the_written_out_definition(rule):
    for seed in range(40):
        rng = random.Random(seed)
        num_groups, group_size = rng.randint(1, 12), rng.randint(2, 6)
        names = rng.sample(range(100), num_groups)
        groups = [g for g in names for _ in range(group_size)]
        rng.shuffle(groups)
        scores = [rng.choice([0, 0, 0, 1, 2]) for _ in groups]  # many zero-variance groups and exact ties
        num_keep = rng.randint(1, num_groups)
        selection = select_pool_groups(t(*scores), ids(*groups), num_keep, rule)
        assert selection.keep.tolist() == _reference(scores, groups, num_keep, rule), (seed, num_keep)


# ---------------------------------------------------------------- bounded refill and seeds


def rounds_of(*informative_per_round):
    """A fake rollout: round r yields ``informative_per_round[r]`` informative groups (as tags), and records calls."""
    played = []

    def play_round(r):
        played.append(r)
        return [f"round{r}"] * informative_per_round[r]

    return play_round, played


def test_refill_stops_as_soon_as_the_pool_has_enough_informative_groups():
    play_round, played = rounds_of(2, 1, 3, 9)
    pool, refills = fill_pool(play_round, len, need=5, max_refill_rounds=3)
    assert (refills, played) == (2, [0, 1, 2])  # 2, then 3, then 6 >= 5
    assert pool == ["round0"] * 2 + ["round1"] + ["round2"] * 3


def test_refill_is_bounded_and_off_without_rounds():
    play_round, played = rounds_of(0, 0, 0, 0)
    assert fill_pool(play_round, len, need=1, max_refill_rounds=2)[1] == 2 and played == [0, 1, 2]
    play_round, played = rounds_of(0, 5)
    assert fill_pool(play_round, len, need=4, max_refill_rounds=0) == ([], 0) and played == [0]
    play_round, played = rounds_of(4, 5)
    assert fill_pool(play_round, len, need=4, max_refill_rounds=3)[1] == 0 and played == [0]
    with pytest.raises(ValueError, match="max_refill_rounds"):
        fill_pool(play_round, len, need=4, max_refill_rounds=-1)


def test_each_iteration_owns_its_refill_rounds_seeds():
    assert [pool_round_index(step, 0, 0) for step in (1, 2, 3)] == [0, 1, 2]  # the plain loop's counter
    indices = [pool_round_index(step, r, 2) for step in (1, 2, 3) for r in range(3)]
    assert indices == list(range(9))  # consecutive, disjoint, whatever rounds earlier iterations used


def pool_run(policy, tag, **sampling):
    """What :func:`trainers.rl.train.play_pool` reads of a run: 2 groups of 3 trained, a scripted policy, one
    process."""
    from types import SimpleNamespace

    from trainers.rl.rollouts import make_env_groups
    from trainers.runtime.distributed import Dist

    config = config_from_dict({"rollout_batch_size": 6, "ppo_mini_batch_size": 6, "micro_batch_size": 6,
                               "dynamic_sampling": sampling, "train_env_manager": {
                                   "num_env_groups": 2, "group_size": 3, "tags": [tag]}})
    dist = Dist(0, 1, torch.device("cpu"))
    groups = make_env_groups(config.pool_env_manager, "train_env_manager", dist, config.train_seed_start, fixed=False)
    return SimpleNamespace(config=config, dist=dist, train_groups=groups, sampler=SimpleNamespace(train=policy),
                           prompt_fits=None)


def test_play_pool_refills_zero_variance_pools_up_to_the_bound_on_fresh_seeds():
    """The oracle plays every member of a group alike (same seed, deterministic lake): every group has zero variance,
    so each iteration plays all its refill rounds, each on seeds of its own."""
    from agentgym_bench.rollout.scripted import OraclePolicy
    from trainers.rl.train import play_pool

    run = pool_run(OraclePolicy(), "AgentFrozenLakeNoSlip-v0", oversample=2, max_refill_rounds=2)
    seeds = []
    for step in (1, 2):
        pool, refills = play_pool(run, step)
        assert refills == 2 and len(pool) == 3 * 4 * 3  # 3 rounds x 4 groups x 3 episodes
        assert all(len({t.episode_reward for t in pool if t.group_key == key}) == 1 for key in {t.group_key
                                                                                                 for t in pool})
        seeds.append(sorted({t.seed for t in pool}))
    first = run.config.train_seed_start
    assert seeds == [list(range(first, first + 12)), list(range(first + 12, first + 24))]
    assert run.config.train_seed_range == range(first, first + 100 * 12)


def test_play_pool_stops_refilling_once_the_pool_is_informative():
    """A random bandit player (each turn's arm shared by a few consecutive envs): the first round of 4 groups holds
    fewer than the 2 informative groups needed, so the pool is refilled, and it stops at the first round after which
    it holds 2 (DAPO: sample until the batch can be filled), well before the bound of 3."""
    from agentgym_bench.rollout.scripted import RandomPolicy
    from trainers.rl.train import play_pool

    run = pool_run(RandomPolicy(seed=0), "AgentBandit-v0", oversample=2, max_refill_rounds=3)
    pool, refills = play_pool(run, 1)
    first = run.config.train_seed_start
    played = 4 * (1 + refills)  # groups
    assert len(pool) == 3 * played and {t.seed for t in pool} == set(range(first, first + played))

    def informative(episodes):
        keys = {t.group_key for t in episodes}
        return sum(len({t.episode_reward for t in episodes if t.group_key == key}) > 1 for key in keys)

    after = [informative([t for t in pool if t.seed < first + 4 * (r + 1)]) for r in range(refills + 1)]
    assert 1 <= refills < 3 and all(n < 2 for n in after[:-1]) and after[-1] >= 2, after


# ---------------------------------------------------------------- config


def test_starpo_snr_is_starpo_plus_dynamic_sampling():
    assert {k for k in STARPO_SNR if STARPO.get(k) != STARPO_SNR[k]} == {"dynamic_sampling"}
    config = config_from_dict({"preset": "starpo_snr"})
    sampling = config.dynamic_sampling
    assert (sampling.oversample, sampling.select, sampling.max_refill_rounds) == (2, "top_std", 2)
    assert sampling.enabled and not config_from_dict({"preset": "starpo"}).dynamic_sampling.enabled
    assert config.pool_env_manager.num_env_groups == 16 and config.train_env_manager.num_env_groups == 8
    assert config.groups_kept == 8 and config.rollout_batch_size == 128  # the trained batch is unchanged
    # every iteration reserves 3 rounds x 16 groups of seeds
    assert config.train_seed_range == range(10_000, 10_000 + 100 * 3 * 16)


def test_the_pool_scales_every_tag_and_round_trips(tmp_path):
    config = config_from_dict({
        "dynamic_sampling": {"oversample": 3, "select": "first_nonzero"},
        "train_env_manager": {"tags": ["AgentSokoban-v0", "AgentFrozenLake-v0"], "num_groups_partition": [5, 3]}})
    assert config.pool_env_manager.num_groups_partition == [15, 9]
    assert config.pool_env_manager.num_env_groups == 24 and config.train_env_manager.num_groups_partition == [5, 3]
    config.save(tmp_path / "c.yaml")
    assert load_config(tmp_path / "c.yaml") == config


@pytest.mark.parametrize(("data", "message"), [
    ({"dynamic_sampling": {"oversampling": 2}}, "unknown config key 'dynamic_sampling.oversampling'; did you mean "
                                                "dynamic_sampling.oversample"),
    ({"oversample": 2}, "did you mean dynamic_sampling.oversample"),
    ({"dynamic_sampling": {"oversample": 0}}, "dynamic_sampling.oversample=0 must be a positive integer"),
    ({"dynamic_sampling": {"oversample": 1.5}}, "dynamic_sampling.oversample=1.5 must be int"),
    ({"dynamic_sampling": {"max_refill_rounds": -1}}, "max_refill_rounds=-1 must be an integer >= 0"),
    ({"dynamic_sampling": {"select": "std"}}, "dynamic_sampling.select='std' is not one of top_std, first_nonzero"),
    ({"dynamic_sampling": {"oversample": 2}, "rollout_batch_size": 8,
      "train_env_manager": {"group_size": 1}}, "needs train_env_manager.group_size >= 2"),
    ({"preset": "starpo_snr", "async_rollout": {"max_staleness": 1}},
     "not implemented with async_rollout.max_staleness=1"),
    ({"preset": "starpo_snr", "train_seed_start": 10, "max_steps": 2}, r"training seeds 10..105 meet validation"),
])
def test_dynamic_sampling_config_errors_name_the_fix(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


# ---------------------------------------------------------------- a tiny real run

POOL_KEYS = ("rollout/informative_share", "rollout/pool_groups", "rollout/groups_dropped",
             "rollout/uninformative_kept", "rollout/refill_rounds", "reward/in_group_std", "reward/in_group_std_kept")


def test_a_tiny_run_trains_on_informative_groups_logs_the_pool_and_resumes_exactly(tiny_model, tmp_path):
    """4 groups trained of a pool of 8 (+ 8 per refill), FrozenLake on the tiny model: every iteration logs the pool;
    when the pool holds >= 4 informative groups all kept groups are informative; a run resumed from the checkpoint
    after iteration 1 repeats iteration 2 exactly (same seeds, same sampling stream)."""
    import shutil

    from trainers.rl.train import main
    from trainers.runtime.metrics import read_metrics

    overrides = {"max_steps": 2, "eval_steps": 2, "save_steps": 1, "save_total_limit": 2, "val_batch_size": 4,
                 "val_env_manager": {"num_env_groups": 4},
                 "dynamic_sampling": {"oversample": 2, "max_refill_rounds": 1}}
    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path / "straight", "starpo_snr", **overrides))
    records = main(config).records[1:]
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert all(key in r for key in POOL_KEYS), r
        assert r["rollout/pool_groups"] == 8 * (1 + r["rollout/refill_rounds"])
        assert r["rollout/groups_kept"] == 4 and r["rollout/samples"] > 0
        assert r["rollout/groups_dropped"] == r["rollout/pool_groups"] - 4
        informative = round(r["rollout/informative_share"] * r["rollout/pool_groups"])
        assert r["rollout/uninformative_kept"] == max(0, 4 - informative)
        assert r["rollout/refill_rounds"] == 1 or informative >= 4  # no refill: the first round sufficed
        assert r["reward/in_group_std_kept"] >= r["reward/in_group_std"]
    assert any(r["rollout/informative_share"] < 1 for r in records)  # the pool did hold groups to drop

    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "straight", resumed)
    shutil.rmtree(resumed / "checkpoint-2")
    main(config_from_dict({**config.to_dict(), "output_dir": str(resumed), "resume_from_checkpoint": "auto"}))
    straight, again = ([{k: v for k, v in r.items() if not k.startswith("time/")} for r in read_metrics(run)]
                       for run in (tmp_path / "straight" / "metrics.jsonl", resumed / "metrics.jsonl"))
    assert straight == again
