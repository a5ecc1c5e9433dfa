"""Reply writers that need no model: the oracle (privileged planner) and a uniformly random valid-action agent.

They read the agent env's true state, so they take the env itself; the rollout layer wraps them in the batched
policy protocol.
"""

from __future__ import annotations

import numpy as np

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.agent.parsing import format_reply


def oracle_reply(env: LLMAgentEnv) -> str:
    """The game's oracle plan for this turn, written as a well-formed reply.

    Calls ``env.game.unwrapped.oracle_turn(turns_left, actions_left, max_actions_per_turn)``
    (see ``docs/core-env-contract.md``).
    """
    game = env.game.unwrapped
    actions = game.oracle_turn(env.turns_left, env.actions_left, env.max_actions_per_turn)
    return format_reply(list(actions), enable_think=env.enable_think)


def random_reply(env: LLMAgentEnv, rng: np.random.Generator, *, max_actions: int = 1) -> str:
    """A reply with 1..``max_actions`` actions drawn uniformly from the valid actions (with replacement).

    ``max_actions`` is capped by the env's per-turn limit. Games that list no valid actions get an empty answer.
    """
    valid = env.valid_actions or []
    if not valid:
        return format_reply([], enable_think=env.enable_think)
    n = int(rng.integers(1, min(max_actions, env.max_actions_per_turn) + 1))
    return format_reply([valid[int(i)] for i in rng.integers(0, len(valid), size=n)], enable_think=env.enable_think)
