"""Gymnasium vector envs over agent ids: sync as registered, async with the one-line fix of docs/agent-env.md (its
example runs in test_agent_env_doc.py)."""

import gymnasium as gym
import numpy as np

import agentgym_bench
from agentgym_bench.agent.policies import oracle_reply

gym.register_envs(agentgym_bench)


def single_env_episode_start(env_id, seed):
    return gym.make(env_id).reset(seed=seed)[0]


def test_async_vector_env_with_the_documented_fix_returns_real_observations_and_steps():
    envs = gym.make_vec("AgentFrozenLake-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"shared_memory": False})
    try:
        observations, infos = envs.reset(seed=[3, 4])
        assert list(observations) == [single_env_episode_start("AgentFrozenLake-v0", s) for s in (3, 4)]
        observations, rewards, terminated, _, infos = envs.step(["<think></think><answer>Up</answer>", "no tags"])
        assert observations[0].startswith("Reward:") and "State:" in observations[1]
        assert list(infos["format_valid"]) == [True, False] and np.isclose(rewards[1], -0.1)
    finally:
        envs.close()


def test_sync_vector_env_works_as_registered():
    envs = gym.make_vec("AgentSokoban-v0", num_envs=2)
    observations, _ = envs.reset(seed=0)
    reply = oracle_reply(envs.envs[0])
    _, _, _, _, infos = envs.step([reply, reply])
    assert observations[0] == single_env_episode_start("AgentSokoban-v0", 0) and infos["format_valid"].all()
    envs.close()

