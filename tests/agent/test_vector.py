"""Gymnasium vector envs over agent ids: sync as registered, async as a plain call (default shared memory) and with
``shared_memory=False``. docs/agent-env.md's example runs in test_agent_env_doc.py; the shared-memory encoding itself
is tested in tests/test_spaces.py."""

import gymnasium as gym
import numpy as np
import pytest

import agentgym_bench
from agentgym_bench.agent.policies import oracle_reply

gym.register_envs(agentgym_bench)


def single_env_episode_start(env_id, seed):
    return gym.make(env_id).reset(seed=seed)[0]


@pytest.mark.parametrize("env_id", ["AgentSokoban-v0", "AgentFrozenLake-v0"])
def test_default_async_call_gives_the_observations_of_the_envs_stepped_one_by_one(env_id):
    """``gym.make_vec(id, num_envs=2, vectorization_mode="async")`` as is: shared memory on, copy on, next-step
    autoreset. Env 0 follows the oracle (Sokoban ends solved within the steps and is auto-reset), env 1 replies
    badly formatted text; both must match single envs given the same seeds and replies."""
    seeds = [3, 4]
    singles = [gym.make(env_id) for _ in seeds]
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="async")
    try:
        assert envs.shared_memory and envs.copy
        observations, _ = envs.reset(seed=seeds)
        expected = tuple(env.reset(seed=s)[0] for env, s in zip(singles, seeds, strict=True))
        assert isinstance(observations, tuple) and observations == expected
        assert all(len(set(o)) > 10 and "State:" in o for o in observations)  # not '000...'
        done = [False, False]
        for _ in range(4):
            replies = [oracle_reply(singles[0]), "no tags at all"]
            observations, rewards, terminated, truncated, _ = envs.step(replies)
            for i, (env, reply) in enumerate(zip(singles, replies, strict=True)):
                if done[i]:  # next-step autoreset: this step reset the env (its RNG continues from the seed)
                    obs, reward, term, trunc = env.reset()[0], 0.0, False, False
                else:
                    obs, reward, term, trunc, _ = env.step(reply)
                assert observations[i] == obs
                assert (rewards[i], terminated[i], truncated[i]) == (reward, term, trunc)
                done[i] = term or trunc
    finally:
        envs.close()
        for env in singles:
            env.close()


def test_async_vector_env_without_shared_memory_returns_real_observations_and_steps():
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
