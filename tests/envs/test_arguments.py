"""Every numeric and boolean argument of the games and the agent wrapper is checked: type, finiteness, range."""

import gymnasium as gym
import pytest

import agentgym_bench  # noqa: F401  (registers the ids)

BAD = [
    ("AgentFrozenLake-v0", "format_penalty", float("nan")),
    ("AgentFrozenLake-v0", "format_penalty", float("inf")),
    ("AgentFrozenLake-v0", "format_penalty", "-0.1"),
    ("AgentFrozenLake-v0", "is_slippery", "no"),
    ("AgentFrozenLake-v0", "is_slippery", 0),
    ("AgentFrozenLake-v0", "p", float("nan")),
    ("AgentFrozenLake-v0", "p", "0.8"),
    ("AgentFrozenLake-v0", "success_rate", float("nan")),
    ("AgentFrozenLake-v0", "size", 4.0),
    ("AgentFrozenLake-v0", "size", True),
    ("AgentFrozenLake-v0", "size", 33),
    ("AgentFrozenLake-v0", "enable_think", "yes"),
    ("AgentFrozenLake-v0", "max_turns", 2.5),
    ("AgentFrozenLake-v0", "max_reply_words", 0),
    ("AgentFrozenLake-v0", "instructions", 3),
    ("AgentBandit-v0", "high_prob", float("nan")),
    ("AgentBandit-v0", "high_prob", "0.5"),
    ("AgentBandit-v0", "low_payoff", float("inf")),
    ("AgentBandit-v0", "high_payoff", None),
    ("AgentSokoban-v0", "num_boxes", True),
    ("AgentSokoban-v0", "num_boxes", 1.0),
    ("AgentSokoban-v0", "search_depth", float("inf")),
    ("AgentSokoban-v0", "vocab", ["default"]),
    ("AgentWebShop-v0", "timeout", float("nan")),
    ("AgentWebShop-v0", "timeout", 0),
    ("AgentWebShop-v0", "retries", -1),
    ("AgentWebShop-v0", "retries", 1.5),
]


@pytest.mark.parametrize(("env_id", "name", "value"), BAD, ids=[f"{e}-{n}-{v!r}" for e, n, v in BAD])
def test_bad_argument_is_a_value_error_naming_it(env_id, name, value):
    with pytest.raises(ValueError, match=f"^{name}="):
        gym.make(env_id, **{name: value})


def test_numpy_scalars_are_accepted():
    import numpy as np

    env = gym.make("AgentFrozenLake-v0", size=np.int64(5), p=np.float32(0.9), is_slippery=np.bool_(False),
                   format_penalty=np.float64(-0.5))
    assert env.unwrapped.game.size == 5 and env.unwrapped.format_penalty == -0.5
    assert type(env.unwrapped.game.is_slippery) is bool
