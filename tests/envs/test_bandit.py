"""BanditGame: payoffs, arm order, words, validation, determinism, contract and oracle."""

from __future__ import annotations

import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym_bench.envs.bandit import GENERALISATION_ARMS, TEST_ARMS, BanditGame


def within_4_sigma(count: int, n: int, prob: float) -> bool:
    return abs(count - n * prob) <= 4 * math.sqrt(n * prob * (1 - prob))


def test_defaults_are_the_papers():
    env = BanditGame()
    assert (env.low_arm, env.high_arm) == ("Phoenix", "Dragon")
    assert (env.low_payoff, env.high_payoff, env.high_prob) == (0.15, 1.0, 0.25)
    assert env.high_payoff * env.high_prob > env.low_payoff  # the risky arm is the better bet


def test_payoff_frequencies():
    env = BanditGame()
    n, wins = 20_000, 0
    for seed in range(n):
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step("Dragon")
        assert reward in (0.0, 1.0) and terminated is True and truncated is False and info["success"] is True
        wins += reward == 1.0
    assert within_4_sigma(wins, n, 0.25), wins
    for seed in range(200):
        env.reset(seed=seed)
        _, reward, _, _, info = env.step("phoenix")
        assert reward == 0.15 and info["success"] is False


def test_arm_order_is_randomised_by_the_seed():
    env = BanditGame()
    n, dragon_first = 10_000, 0
    for seed in range(n):
        obs, info = env.reset(seed=seed)
        assert obs in ("Arms: Dragon, Phoenix", "Arms: Phoenix, Dragon")
        assert info["valid_actions"] == obs.removeprefix("Arms: ").split(", ")
        first, second = info["valid_actions"]
        assert f"named {first} and {second}" in info["instructions"]
        assert f"Choose between {first} and {second}" in info["instructions"]
        dragon_first += first == "Dragon"
    assert within_4_sigma(dragon_first, n, 0.5), dragon_first


def test_success_is_the_arm_not_the_draw():
    env = BanditGame(high_prob=0.0)
    env.reset(seed=0)
    obs, reward, _, _, info = env.step("DRAGON")
    assert reward == 0.0 and info["success"] is True
    assert obs.endswith("\nDragon: 0 points")


def test_reset_and_step_info():
    env = BanditGame()
    obs, info = env.reset(seed=1)
    assert info["legend"] == "" and info["success"] is False and info["state_key"] == obs
    assert "symbolic meaning" in info["instructions"]
    obs2, reward, terminated, _, info2 = env.step(" Phoenix\n")
    assert obs2 == obs + "\nPhoenix: 0.15 points"
    assert info2["action_is_valid"] is True and info2["action_is_effective"] is True
    assert info2["valid_actions"] == [] and info2["state_key"] == obs2
    assert isinstance(reward, float) and type(terminated) is bool
    again = env.step("Dragon")  # the game is over: nothing changes
    assert again[:4] == (obs2, 0.0, True, False) and again[4]["action_is_valid"] is False


@pytest.mark.parametrize("word", ["", "Unicorn", "Dragon Phoenix", "Dragon || Phoenix", "<answer>Dragon</answer>", 7])
def test_invalid_words_do_not_end_the_game(word):
    env = BanditGame()
    obs, _ = env.reset(seed=2)
    obs2, reward, terminated, truncated, info = env.step(word)
    assert (obs2, reward, terminated, truncated) == (obs, 0.0, False, False)
    assert info["action_is_valid"] is False and info["action_is_effective"] is False
    assert sorted(info["valid_actions"]) == ["Dragon", "Phoenix"]
    assert env.step("dragon")[2] is True  # a valid word still works afterwards


@pytest.mark.parametrize("arms", [TEST_ARMS, GENERALISATION_ARMS, ("Librarian", "Trader"), ("Slow Turtle", "Red-Fox")])
def test_other_arm_names(arms):
    env = BanditGame(low_arm=arms[0], high_arm=arms[1])
    obs, info = env.reset(seed=0)
    assert sorted(info["valid_actions"]) == sorted(arms) and obs in env.observation_space
    assert env.oracle_turn(1, 1, 1) == [arms[1]]
    _, _, _, _, info = env.step(arms[1].upper())
    assert info["success"] is True
    assert TEST_ARMS == ("Trader", "Librarian") and GENERALISATION_ARMS == ("Engineer", "Teacher")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"low_arm": "Dragon"}, "low_arm"),
        ({"high_arm": "phoenix"}, "high_arm"),
        ({"low_arm": ""}, "low_arm"),
        ({"high_arm": "  "}, "high_arm"),
        ({"high_arm": " Dragon"}, "high_arm"),
        ({"low_arm": "Pho,enix"}, "low_arm"),
        ({"low_arm": "a\nb"}, "low_arm"),
        ({"high_prob": -0.01}, "high_prob"),
        ({"high_prob": 1.5}, "high_prob"),
        ({"high_prob": float("nan")}, "high_prob"),
        ({"low_payoff": float("inf")}, "low_payoff"),
        ({"high_payoff": float("nan")}, "high_payoff"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_validation_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BanditGame(**kwargs)


_DRAWS = """
from agentgym_bench.envs.bandit import BanditGame
env, out = BanditGame(), []
for seed in range(300):
    obs, _ = env.reset(seed=seed)
    out.append((obs, env.step("Dragon")[1]))
print(repr(out))
"""


def test_same_seed_same_order_and_draw_across_processes():
    namespace: dict = {}
    exec(_DRAWS.replace("print(repr(out))", ""), namespace)
    here = namespace["out"]
    other = subprocess.run([sys.executable, "-c", _DRAWS], capture_output=True, text=True, check=True)
    assert repr(here) == other.stdout.strip()
    assert len(set(here)) == 4  # both orders, both draws


@pytest.mark.parametrize("kwargs", [{}, {"render_mode": "ansi"}, {"render_mode": "rgb_array"}])
def test_check_env(kwargs):
    check_env(BanditGame(**kwargs))


def test_check_env_through_the_registry():
    import agentgym_bench  # noqa: F401 - registers the ids

    check_env(gym.make("agentgym/Bandit-v0", render_mode="ansi").unwrapped)


def test_oracle_and_render():
    env = BanditGame(render_mode="rgb_array")
    env.reset(seed=0)
    assert env.oracle_turn(1, 1, 1) == ["Dragon"] and env.oracle_turn(0, 1, 1) == []
    before = env.render()
    assert before.dtype == np.uint8 and before.shape == (96, 160, 3)
    env.step(env.oracle_turn(1, 1, 1)[0])
    after = env.render()
    assert env.oracle_turn(1, 1, 1) == []
    pulled = env.arms.index("Dragon")
    assert tuple(after[13, 20 + 70 * pulled - 3]) == (40, 40, 40)  # frame around the pulled arm's bar
    assert not np.array_equal(before, after)
    ansi = BanditGame(render_mode="ansi")
    assert ansi.reset(seed=0)[0] == ansi.render()
