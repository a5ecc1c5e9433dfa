"""The GEM route with gem-llm installed: ``gem.make`` / ``gem.make_vec`` of our ids give the native episodes."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("gem", reason="the GEM route needs gem-llm (Python <= 3.12): pip install -e '.[gem]'")

import gem  # noqa: E402

from agentgym_bench.adapters.gem import PREFIX, GemAgentEnv, register_gem_envs  # noqa: E402
from agentgym_bench.registration import AGENT_ENVS  # noqa: E402
from tests.adapters.episodes import native_episode, scripted_replies  # noqa: E402

IDS = ["AgentFrozenLake-v0", "AgentSokoban-v0", "AgentBandit-v0"]


def gem_episode(env, seed: int, replies: list[str]) -> list[tuple]:
    obs, info = env.reset(seed=seed)
    out = [(obs, None, False, False, info["agentgym"])]
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        out.append((obs, reward, terminated, truncated, info["agentgym"]))
    return out


def json_free(episode: list[tuple]) -> list[tuple]:
    """Infos compared as JSON would carry them (tuples become lists)."""
    from agentgym_bench.rollout.trajectory import json_safe

    return [(o, r, t, u, json_safe(i)) for o, r, t, u, i in episode]


@pytest.mark.parametrize("env_id", IDS)
def test_gem_make_plays_the_native_episode(env_id):
    assert PREFIX + env_id in register_gem_envs()
    env = gem.make(PREFIX + env_id, prompt="compact")
    assert isinstance(env, gem.Env)
    for seed in (0, 11):
        replies = scripted_replies(env_id, seed, rng_seed=seed, prompt="compact")
        assert json_free(gem_episode(env, seed, replies)) == native_episode(env_id, seed, replies, prompt="compact")


def test_every_agent_id_is_registered_once_and_registration_is_idempotent():
    first, second = register_gem_envs(), register_gem_envs()
    assert first == second == [PREFIX + e for e in AGENT_ENVS]


def test_rewards_ends_and_roll_metrics():
    env = GemAgentEnv("AgentBandit-v0")
    obs, info = env.reset(seed=3)
    assert "Phoenix" in obs and info["agentgym"]["success"] is False
    obs, reward, terminated, truncated, info = env.step("<think></think><answer>Fly</answer>")
    assert reward == pytest.approx(-0.1) and terminated and not truncated
    assert info["metrics"] == {"success": 0.0, "format_valid": 1.0, "action_is_valid": 0.0, "format_penalty": -0.1}
    assert set(info["metrics_agg_mode"]) == set(info["metrics"])
    assert "actions_left" not in info  # kept under "agentgym", away from ROLL's own history fields


def test_global_rngs_are_untouched_and_random_actions_follow_the_seed():
    py_state, np_state = random.getstate(), np.random.get_state()
    env = gem.make(PREFIX + "AgentSokoban-v0")
    env.reset(seed=5)
    actions = [env.sample_random_action() for _ in range(4)]
    env.step(actions[0])
    assert random.getstate() == py_state
    assert all((a == b).all() if isinstance(a, np.ndarray) else a == b
               for a, b in zip(np.random.get_state(), np_state, strict=True))
    env.reset(seed=5)
    assert [env.sample_random_action() for _ in range(4)] == actions
    assert all("<answer>" in a for a in actions)


def test_make_vec_seeds_each_env_and_the_constructor_seed_applies_once():
    vec = gem.make_vec([PREFIX + "AgentFrozenLake-v0"] * 3, prompt="compact")
    obs, _ = vec.reset(seed=20)
    assert list(obs) == [native_episode("AgentFrozenLake-v0", 20 + i, [], prompt="compact")[0][0] for i in range(3)]
    env = GemAgentEnv("AgentFrozenLake-v0", seed=8)
    assert env.reset()[0] == native_episode("AgentFrozenLake-v0", 8, [])[0][0]


def test_spawn_copies_the_state_or_starts_fresh():
    env = GemAgentEnv("AgentSokoban-v0", prompt="compact")
    env.reset(seed=2)
    twin = env.spawn(same_state=True)
    reply = env.sample_random_action()
    assert env.step(reply)[:4] == twin.step(reply)[:4]
    fresh = env.spawn(max_turns=2)
    assert fresh.env.max_turns == 2 and fresh.env_kwargs == {"prompt": "compact", "max_turns": 2}


def test_unknown_id_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown agent env id"):
        GemAgentEnv("AgentChess-v0")


def test_gem_wrappers_stack_on_top_as_in_gem_examples():
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    replies = scripted_replies("AgentSokoban-v0", 30, rng_seed=1)
    expected = native_episode("AgentSokoban-v0", 30, replies)
    vec = gem.make_vec([PREFIX + "AgentSokoban-v0"], wrappers=get_wrapper_fns("concat_with_action,episode_tracking"))
    obs, _ = vec.reset(seed=30)
    assert obs[0].endswith(expected[0][0])
    for reply, (native_obs, reward, terminated, _, _) in zip(replies, expected[1:], strict=True):
        obs, rewards, terminateds, _, info = vec.step([reply])
        assert rewards[0] == pytest.approx(reward)
        if not terminated:  # the vector env auto-resets on the last step
            assert native_obs in obs[0] and reply in obs[0]  # GEM's history concatenation around our text
    assert terminateds[0]
