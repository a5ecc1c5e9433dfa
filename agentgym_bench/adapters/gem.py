"""Our agent envs through GEM's ``gem.Env`` interface (https://github.com/axon-rl/gem, PyPI ``gem-llm``).

GEM's env is Gymnasium-shaped without spaces: ``reset(seed=None) -> (obs, info)``, ``step(action) -> (obs, reward,
terminated, truncated, info)``, both text, plus ``sample_random_action()`` and ``spawn(same_state)``.
:class:`GemAgentEnv` is that interface over one :class:`~agentgym_bench.agent.LLMAgentEnv` (``gym.make`` of an agent
id); observations, rewards and ends are the agent env's own, unchanged.

Registered ids: importing this module (:func:`register_gem_envs`) adds ``agentgym:<agent id>``
(``agentgym:AgentFrozenLake-v0`` ...) to GEM's registry, so ``gem.make("agentgym:AgentSokoban-v0",
prompt="compact")``, ``gem.make_vec`` and ROLL's env managers (``env_type: agentgym:AgentSokoban-v0``) build them.

Where we differ from GEM's base class, and why:

- ``reset(seed)`` does not seed Python's and NumPy's global RNGs (GEM's ``Env.reset`` does): our episodes depend only
  on ``(env id, kwargs, seed)`` through the env's own RNG, and nothing here touches global state.
- ``info`` keeps our info contract under ``info["agentgym"]`` and adds ROLL's ``metrics`` / ``metrics_agg_mode``
  at the top. Flat keys would collide with the fields ROLL's trajectory manager merges ``info`` into (our
  ``actions_left`` would overwrite its own and break its first-turn check).
- The reply format is ours (``<answer>Up || Left</answer>``, several actions a turn), not GEM's ``\\boxed{...}``;
  the default (``ragen``) prompt's first observation says so; the ``compact`` prompt assumes a model trained on it.

Install: ``pip install -e '.[gem]'`` (gem-llm 0.1.0 needs Python <= 3.12.0 and pins nltk==3.9.1).
Note that ``import gem`` calls ``logging.basicConfig(level=INFO)``.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym

import agentgym_bench  # noqa: F401 - registers the env ids
from agentgym_bench.adapters import require
from agentgym_bench.agent import LLMAgentEnv, random_reply
from agentgym_bench.registration import AGENT_ENVS

gem = require("gem", "gem")

PREFIX = "agentgym:"
METRICS_AGG_MODE = {"success": "last", "format_valid": "mean", "action_is_valid": "mean", "format_penalty": "mean"}


class GemAgentEnv(gem.Env):
    """A ``gem.Env`` over the agent env ``agent_id``.

    Arguments:
        agent_id: a registered agent id (``AgentFrozenLake-v0`` ...), with or without the ``agentgym:`` prefix
            (not ``env_id``: GEM's ``make`` and ``register`` take that name themselves).
        seed: the seed of the first ``reset()`` called without one (``gem.make_vec`` passes ``seed + index``).
        **env_kwargs: ``gym.make`` keyword arguments (``prompt="compact"``, budgets, ...).
    """

    def __init__(self, agent_id: str, *, seed: int | None = None, **env_kwargs: Any):
        super().__init__()
        if agent_id.removeprefix(PREFIX) not in AGENT_ENVS:
            raise ValueError(f"unknown agent env id {agent_id!r}; choose from {list(AGENT_ENVS)}")
        agent_id = agent_id.removeprefix(PREFIX)
        self.agent_id, self.env_kwargs = agent_id, dict(env_kwargs)
        self.env: LLMAgentEnv = gym.make(agent_id, **env_kwargs).unwrapped
        self._next_seed = seed

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        if seed is None:
            seed, self._next_seed = self._next_seed, None
        obs, info = self.env.reset(seed=seed)
        return obs, _gem_info(info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, float(reward), terminated, truncated, _gem_info(info)

    def sample_random_action(self) -> str:
        """A well-formed reply with 1..k random valid actions, drawn from the env's own seeded RNG."""
        return random_reply(self.env, self.env.np_random, max_actions=self.env.max_actions_per_turn)

    def spawn(self, same_state: bool = False, **kwargs: Any) -> GemAgentEnv:
        """A new env with the same settings (``kwargs`` override them); with ``same_state``, a copy of this one
        mid-episode (its game state and RNGs included)."""
        if same_state:
            if kwargs:
                raise ValueError("spawn(same_state=True) copies this env; it takes no overrides")
            return copy.deepcopy(self)
        return GemAgentEnv(self.agent_id, **{**self.env_kwargs, **kwargs})

    def close(self) -> None:
        self.env.close()


def _gem_info(info: dict[str, Any]) -> dict[str, Any]:
    metrics = {"success": float(info["success"])}
    for key in ("format_valid", "action_is_valid"):
        if key in info:
            metrics[key] = float(info[key])
    if "format_penalty" in info:
        metrics["format_penalty"] = float(info["format_penalty"])
    return {"agentgym": info, "metrics": metrics, "metrics_agg_mode": {k: METRICS_AGG_MODE[k] for k in metrics}}


def register_gem_envs() -> list[str]:
    """Register ``agentgym:<id>`` for every agent id in GEM's registry (skipping ids already there); return them."""
    from gem.envs.registration import ENV_REGISTRY

    ids = []
    for agent_id in AGENT_ENVS:
        gem_id = PREFIX + agent_id
        if gem_id not in ENV_REGISTRY:
            gem.register(gem_id, entry_point=GemAgentEnv, agent_id=agent_id)
        ids.append(gem_id)
    return ids


register_gem_envs()
