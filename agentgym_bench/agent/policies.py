"""Reply writers that need no model: the oracle (privileged planner) and a uniformly random valid-action agent.

They read the agent env's true state, so they take the env itself: an :class:`LLMAgentEnv` or anything wrapping
one (``gym.make("AgentSokoban-v0")`` returns it inside Gymnasium's wrappers), as Gymnasium's own helpers accept
wrapped envs. The rollout layer wraps them in the batched policy protocol.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.errors import UserError


def agent_env(env: gym.Env) -> LLMAgentEnv:
    """The :class:`LLMAgentEnv` inside ``env`` (``env`` itself or ``env.unwrapped``); TypeError if there is none."""
    agent = env if isinstance(env, LLMAgentEnv) else getattr(env, "unwrapped", None)
    if not isinstance(agent, LLMAgentEnv):
        raise TypeError(f"expected an agent env (gym.make('Agent...-v0') or an LLMAgentEnv), got {env!r}")
    return agent


def oracle_reply(env: gym.Env) -> str:
    """The game's oracle plan for this turn, written as a well-formed reply in the env's action format.

    Calls ``env.game.unwrapped.oracle_turn(turns_left, actions_left, max_actions_per_turn)`` on the agent env
    inside ``env`` (see ``docs/core-env-contract.md``).
    """
    env = agent_env(env)
    game = env.game.unwrapped
    if not hasattr(game, "oracle_turn"):
        name = env.spec.id if env.spec else type(env).__name__
        raise UserError(f"{name}: its game ({type(game).__name__}) has no oracle (no oracle_turn, "
                        "docs/core-env-contract.md): play it with the random policy or a model")
    actions = game.oracle_turn(env.turns_left, env.actions_left, env.max_actions_per_turn)
    return env.write_reply(list(actions))


def random_reply(env: gym.Env, rng: np.random.Generator, *, max_actions: int = 1) -> str:
    """A reply with 1..``max_actions`` actions drawn uniformly from the valid actions (with replacement).

    ``env``: an agent env or a wrapper of one. ``max_actions`` is capped by the env's per-turn limit. Games that list
    no valid actions get an empty answer.
    """
    env = agent_env(env)
    valid = env.valid_actions or []
    if not valid:
        return env.write_reply([])
    n = int(rng.integers(1, min(max_actions, env.max_actions_per_turn) + 1))
    return env.write_reply([valid[int(i)] for i in rng.integers(0, len(valid), size=n)])
