"""Held out by content: each generated env's seeds of one split only draw content of that split, deterministically,
and the test episodes of the bundled suites occur in no training or validation episode."""

import subprocess
import sys

import gymnasium as gym
import pytest

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.benchmark.overlap import content_reader, overlap
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.envs.frozen_lake_rules import map_text
from agentgym_bench.envs.sokoban.generator import layout_text
from agentgym_bench.multiagent.bargain import BargainEnv
from agentgym_bench.multiagent.bargain_rules import deal_text
from agentgym_bench.seeds import (
    TEST_SEEDS,
    TRAIN_SEED_START,
    V1_TEST_SEEDS,
    check_seeds_disjoint,
    content_split,
    seed_content_split,
)

SPLIT_SEEDS = {"test": range(TEST_SEEDS.start, TEST_SEEDS.start + 1000), "validation": range(0, 1000),
               "train": range(TRAIN_SEED_START, TRAIN_SEED_START + 2000)}
from agentgym_bench.envs.webshop.game import WebShopGame  # noqa: E402

GENERATED = ["AgentSokoban-v0", "AgentSokobanAltVocab-v0", "AgentSokobanLarge-v0", "AgentFrozenLake-v0",
             "AgentFrozenLakeNoSlip-v0"]


def core_game(env_id):
    return gym.make(env_id).unwrapped.game.unwrapped


def split_of_episode(game):
    """The content split of the episode ``game`` was just reset to, from the game's own state."""
    if hasattr(game, "room"):
        return content_split(layout_text(game.room.height, game.room.width, game.room.floor, game.room.targets))
    if hasattr(game, "desc") and game.desc:
        return content_split(map_text(game.desc))
    return content_split(deal_text(game.counts, *game.values.values()))


@pytest.mark.parametrize("env_id", GENERATED)
def test_first_observations_of_the_splits_are_disjoint(env_id):
    game = core_game(env_id)
    seen = {}
    for split, seeds in SPLIT_SEEDS.items():
        seen[split] = set()
        for seed in seeds:
            obs, _ = game.reset(seed=seed)
            assert split_of_episode(game) == split, (split, seed)
            seen[split].add(obs)
    assert not seen["test"] & seen["train"] and not seen["test"] & seen["validation"]
    assert not seen["validation"] & seen["train"]
    assert len(seen["test"]) > 100  # many distinct test episodes, not a handful


def test_webshop_goals_of_the_splits_ask_for_different_things():
    """Content, not only goal indices: no training or validation seed plays a goal that asks for what a test goal
    asks for, in any wording (the bundled store has three such twins among its training goals; seeds skip them)."""
    from agentgym_bench.envs.webshop.catalog import load_catalog, requirements

    game, goals, seen = core_game("AgentWebShop-v0"), load_catalog().goals, {}
    sizes = {"test": 500, "validation": 1000, "train": 1792}  # every goal of each split, as seeds map them
    for split, size in sizes.items():
        start = SPLIT_SEEDS[split].start
        seen[split] = {requirements(goals[game.reset(seed=s)[1]["goal_index"]]) for s in range(start, start + size)}
    assert len(seen["test"]) == 500 and len(seen["train"]) > 1700
    assert not seen["test"] & seen["train"] and not seen["test"] & seen["validation"]
    assert not seen["validation"] & seen["train"]
    with pytest.raises(ValueError, match="left out of training"):
        WebShopGame(split="train").reset(options={"goal_index": 3144 - 1500})


def test_bargain_deals_of_the_splits_are_disjoint():
    env, seen = BargainEnv(), {}
    for split, seeds in SPLIT_SEEDS.items():
        seen[split] = set()
        for seed in seeds:
            env.reset(seed=seed)
            assert split_of_episode(env) == split
            seen[split].add(deal_text(env.counts, *env.values.values()))
    assert not seen["test"] & seen["train"] and not seen["test"] & seen["validation"]
    assert not seen["validation"] & seen["train"] and len(seen["test"]) > 50


@pytest.mark.parametrize("suite", ["agentgym-v2", "agentgym-ma-v2"])
def test_no_test_episode_of_the_suite_occurs_in_training_or_validation(suite):
    for entry in load_suite(suite).entries:
        found = overlap(entry, train=5000, validation=2000)
        assert found is None or (found.in_train, found.in_validation) == (0, 0), found


def test_v1_overlap_is_measured_and_its_episodes_are_unchanged():
    """agentgym-v1's retired test seeds draw any content, as before (so its board replays); the measure sees that."""
    entry = load_suite("agentgym-v1").entry("frozenlake")
    found = overlap(entry, train=5000, validation=0)
    assert found.in_train >= 10  # 25 of 400 among 5,000 training maps; 34.5% among 50,000
    game = core_game("AgentSokoban-v0")
    splits = {(game.reset(seed=s), split_of_episode(game))[1] for s in range(V1_TEST_SEEDS.start, V1_TEST_SEEDS.start
                                                                              + 300)}
    assert splits == {"train", "validation", "test"}


def test_a_seed_fixes_its_episode_in_any_process():
    code = ("import agentgym_bench, gymnasium as gym;"
            "print([gym.make(i).unwrapped.game.unwrapped.reset(seed=s)[0] for i in "
            "('AgentSokoban-v0', 'AgentFrozenLake-v0') for s in (3, 12345, 2000000007)])")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    here = str([core_game(i).reset(seed=s)[0] for i in ("AgentSokoban-v0", "AgentFrozenLake-v0")
                for s in (3, 12345, 2000000007)])
    assert runs == {here + "\n"}


def test_unseeded_reset_keeps_the_last_seeds_split():
    game = core_game("AgentFrozenLake-v0")
    game.reset()
    assert split_of_episode(game) == "train"
    game.reset(seed=TEST_SEEDS.start)
    assert {(game.reset(), split_of_episode(game))[1] for _ in range(50)} == {"test"}
    assert seed_content_split(None, "validation") == "validation" and seed_content_split(V1_TEST_SEEDS.start) is None


def test_content_reader_says_when_there_is_no_content():
    assert content_reader(load_suite("agentgym-v2").entry("bandit")) is None


def test_a_tiny_content_space_with_no_test_map_is_an_error_not_a_hang():
    game = gym.make("agentgym/FrozenLake-v0", size=2).unwrapped
    splits = set()
    for seed in (TEST_SEEDS.start, 0, TRAIN_SEED_START):
        try:
            game.reset(seed=seed)
            splits.add(split_of_episode(game))
        except RuntimeError as error:
            assert "too small to split" in str(error)
    assert "train" in splits


def test_training_ranges_meeting_either_held_out_range_are_refused():
    for held in (TEST_SEEDS, V1_TEST_SEEDS):
        with pytest.raises(ValueError, match="held-out|retired"):
            check_seeds_disjoint("training seeds", range(held.start - 5, held.start + 5))
    check_seeds_disjoint("training seeds", range(TRAIN_SEED_START, TRAIN_SEED_START + 10**6))


def test_ranges_that_share_one_seed_are_refused_and_touching_ones_are_not():
    check_seeds_disjoint("a", range(0, 10), "b", range(10, 20))  # touching, not sharing
    with pytest.raises(ValueError, match=r"meet b .* \(e\.g\. seed 9\)"):
        check_seeds_disjoint("a", range(0, 10), "b", range(9, 20))
    with pytest.raises(ValueError, match="held-out test seeds"):
        check_seeds_disjoint("training seeds", range(TEST_SEEDS.stop - 1, TEST_SEEDS.stop + 5))
