"""Contract tests over every registered agent id: make, check_env, determinism, argument routing."""

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentgym_bench
from agentgym_bench.agent import LLMAgentEnv, random_reply
from agentgym_bench.registration import AGENT_ENVS, GAMES

AGENT_IDS = list(AGENT_ENVS)


@pytest.mark.parametrize("env_id", AGENT_IDS)
def test_check_env_passes(env_id):
    env = gym.make(env_id)
    assert isinstance(env.unwrapped, LLMAgentEnv)
    check_env(env.unwrapped)


@pytest.mark.parametrize("name", list(GAMES))
def test_core_games_pass_check_env(name):
    check_env(gym.make(f"agentgym/{name}-v0").unwrapped)


def play_script(env_id: str, seed: int, kwargs: dict | None = None) -> list:
    """Observations, rewards and infos of an episode whose replies come from a generator seeded by ``seed``."""
    env = gym.make(env_id, **(kwargs or {}))
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out = [obs, info]
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(random_reply(env.unwrapped, rng, max_actions=3))
        out += [obs, reward, terminated, info]
        done = terminated or truncated
    return json.loads(json.dumps(out))


@pytest.mark.parametrize("env_id", AGENT_IDS)
def test_same_seed_same_episode_in_process(env_id):
    for seed in range(5):
        assert play_script(env_id, seed) == play_script(env_id, seed)


def test_same_seed_same_episode_across_processes():
    code = ("import json, sys; from tests.test_registration import play_script, AGENT_IDS; "
            "print(json.dumps({e: [play_script(e, s) for s in range(3)] for e in AGENT_IDS}))")
    root = str(Path(__file__).parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""}, cwd=root)
    theirs = json.loads(out.stdout)
    assert theirs == {e: [play_script(e, s) for s in range(3)] for e in AGENT_IDS}


def test_different_seeds_give_different_episodes():
    for env_id in ["AgentSokoban-v0", "AgentFrozenLake-v0"]:
        firsts = {gym.make(env_id).reset(seed=s)[0] for s in range(20)}
        assert len(firsts) > 10


def test_kwargs_reach_game_and_wrapper():
    env = gym.make("AgentSokoban-v0", dim_room=(7, 7), max_turns=3, prompt="compact")
    obs, _ = env.reset(seed=0)
    agent = env.unwrapped
    assert agent.max_turns == 3
    assert len(obs.splitlines()[0]) == 7 and obs.endswith("actions left: 10")


def test_unknown_argument_is_named():
    with pytest.raises(TypeError, match="colour"):
        gym.make("AgentSokoban-v0", colour="red")


@pytest.mark.parametrize(("env_id", "kwargs", "name"), [
    ("AgentSokoban-v0", {"num_boxes": 30}, "num_boxes"),
    ("AgentSokoban-v0", {"dim_room": (1, 6)}, "dim_room"),
    ("AgentFrozenLake-v0", {"size": 1}, "size"),
    ("AgentBandit-v0", {"high_arm": "Phoenix"}, "arm"),
    ("AgentFrozenLake-v0", {"max_turns": 0}, "max_turns"),
])
def test_impossible_configurations_name_the_argument(env_id, kwargs, name):
    with pytest.raises(ValueError, match=name):
        gym.make(env_id, **kwargs)


def test_register_envs_idiom_and_import():
    gym.register_envs(agentgym_bench)
    assert set(AGENT_IDS) <= set(gym.registry)


@pytest.mark.parametrize("env_id", AGENT_IDS)
def test_render_modes(env_id):
    modes = gym.make(env_id).metadata["render_modes"]
    assert "ansi" in modes
    if env_id != "AgentWebShop-v0":  # grid games draw a picture; WebShop is a text page
        assert "rgb_array" in modes
    if "rgb_array" in modes:
        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=0)
        picture = env.render()
        assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0)
    assert isinstance(env.render(), str)
