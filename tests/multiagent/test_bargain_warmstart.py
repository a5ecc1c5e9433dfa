"""Bargain in the warm start: random-demand demonstrations on both seats, evaluation against random demands."""

import pytest

pytest.importorskip("pettingzoo", reason="PettingZoo envs need the multiagent extra: pip install -e '.[multiagent]'")

from agentgym_bench.multiagent import bargain_rules as rules  # noqa: E402
from agentgym_bench.rollout.scripted import OraclePolicy, RandomPolicy  # noqa: E402
from agentgym_bench.seeds import TRAIN_SEED_START  # noqa: E402
from trainers.sft.sft_config import SFTConfig  # noqa: E402
from trainers.sft.warmstart import collect_demonstrations, success_table  # noqa: E402


def _config(**kwargs):
    return SFTConfig(envs=("Bargain-v0",), episodes=20, eval_episodes=300, history=0, **kwargs)


def test_demonstrations_are_both_seats_of_random_matches_on_training_seeds():
    demonstrations = collect_demonstrations(_config())
    assert len(demonstrations) == 40
    assert [t.seed for t in demonstrations] == [s for s in range(TRAIN_SEED_START, TRAIN_SEED_START + 20)
                                               for _ in range(2)]
    pools = set()
    for trajectory in demonstrations:
        assert trajectory.env_id == "Bargain-v0" and trajectory.history == 0 and trajectory.turns
        counts = tuple(int(n) for n in trajectory.turns[0].observation.split("pool of ")[1].split(".")[0].split()
                       if n.isdigit())
        pools.add(counts)
        for turn in trajectory.turns:
            assert turn.info["format_valid"] and turn.info["valid_demand"]  # well formed, within the pool
            assert rules.read_demand(turn.actions[0], counts) is not None
    assert len(pools) > 5
    replies = [[t.reply for t in d.turns] for d in demonstrations]
    assert replies == [[t.reply for t in d.turns] for d in collect_demonstrations(_config())]  # seeded
    assert replies != [[t.reply for t in d.turns] for d in collect_demonstrations(_config(seed=1))]


def test_the_evaluation_is_the_win_rate_against_random_demands():
    scripted = success_table(OraclePolicy(), _config(), history=0)["Bargain-v0"]  # the scripted bargainer stands in
    random = success_table(RandomPolicy(0), _config(), history=0)["Bargain-v0"]
    assert scripted["episodes"] == random["episodes"] == 300
    assert scripted["ci_low"] > random["ci_high"] and scripted["format_valid"] == 1.0
