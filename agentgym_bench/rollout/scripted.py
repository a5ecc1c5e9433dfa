"""Policies that need no model: the oracle, a uniformly random valid-action agent, and a noisy oracle.

They read the agent envs the rollout engine passes alongside the conversations (see
:class:`~agentgym_bench.rollout.policy.Policy`), and return text only (no token ids). Each owns a numpy
``Generator`` seeded at construction, so a rollout with them is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import gymnasium as gym
import numpy as np

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.agent.policies import oracle_reply, random_reply
from agentgym_bench.registration import GAMES, load_class
from agentgym_bench.rollout.policy import Generation, Message, key_seed

DEMONSTRATORS = {"oracle": "oracle_turn", "first-hit": "first_hit_turn"}
"""Demonstrator name -> the game method that plans its turn (``first-hit``: WebShop only)."""


def has_demonstrator(env_id: str, name: str) -> bool:
    """Whether the game of the registered agent env ``env_id`` plans turns of demonstrator ``name`` (read from the
    registration, no env built)."""
    game = gym.spec(env_id).kwargs.get("game") if env_id in gym.registry else None
    return name in DEMONSTRATORS and game in GAMES and hasattr(load_class(GAMES[game]), DEMONSTRATORS[name])


def _agent_envs(envs: Sequence[LLMAgentEnv] | None, n: int, who: str) -> Sequence[LLMAgentEnv]:
    if envs is None or len(envs) != n:
        raise ValueError(f"{who} reads the envs: pass envs= with one env per conversation")
    return envs


class OraclePolicy:
    """The game's oracle plan each turn (``oracle_reply``)."""

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[LLMAgentEnv] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        envs = _agent_envs(envs, len(conversations), "OraclePolicy")
        return [Generation(oracle_reply(env)) for env in envs]


class RandomPolicy:
    """1..k uniformly random valid actions per turn, well formatted (``random_reply``).

    Arguments:
        seed: seeds the policy's generator; with ``keys`` each conversation draws from its own generator seeded by
            ``(seed, key)`` (:func:`~agentgym_bench.rollout.policy.key_seed`) instead.
        max_actions: k, the most actions per reply, capped by each env's per-turn limit; ``None``: that limit (the
            random agent of ``agentgym-bench demo`` and ``docs/oracles.md``).
    """

    def __init__(self, seed: int = 0, *, max_actions: int | None = None):
        if max_actions is not None and max_actions < 1:
            raise ValueError(f"max_actions={max_actions} must be >= 1 or None")
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.max_actions = max_actions

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[LLMAgentEnv] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        envs = _agent_envs(envs, len(conversations), "RandomPolicy")
        rngs = ([self.rng] * len(envs) if keys is None
                else [np.random.default_rng(key_seed(self.seed, k)) for k in keys])
        return [Generation(random_reply(env, rng, max_actions=self.max_actions or env.max_actions_per_turn))
                for env, rng in zip(envs, rngs, strict=True)]


class NoisyOraclePolicy:
    """The oracle, except that with probability ``epsilon`` a turn's reply is :class:`RandomPolicy`'s.

    The demonstrations of the warm start: well-formed replies with skill, but below the oracle.

    Arguments:
        epsilon: probability of a random turn, in [0, 1].
        seed: seeds the policy's generator (both the coin and the random actions).
        max_random_actions: most actions in a random reply.
        max_oracle_actions: plan at most this many actions a turn (the game's ``oracle_turn`` with this per-turn
            limit, so it replans more often: shorter, closed-loop replies that a small model imitates more easily);
            ``None``: the env's own limit, as :func:`~agentgym_bench.agent.policies.oracle_reply`.
        demonstrators: env id -> the game's demonstrator to follow instead of its oracle (``"first-hit"``: the
            game's ``first_hit_turn``, which only ``AgentWebShop-v0`` has); other envs follow their oracle.
    """

    def __init__(self, epsilon: float, seed: int = 0, *, max_random_actions: int = 1,
                 max_oracle_actions: int | None = None, demonstrators: Mapping[str, str] | None = None):
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon={epsilon} must be in [0, 1]")
        if max_oracle_actions is not None and max_oracle_actions < 1:
            raise ValueError(f"max_oracle_actions={max_oracle_actions} must be >= 1 or None")
        for env_id, name in (demonstrators or {}).items():
            if name not in DEMONSTRATORS:
                raise ValueError(f"demonstrator {name!r} of {env_id} must be one of {list(DEMONSTRATORS)}")
        self.epsilon = float(epsilon)
        self.random = RandomPolicy(seed, max_actions=max_random_actions)
        self.max_oracle_actions = max_oracle_actions
        self.demonstrators = dict(demonstrators or {})

    def _oracle(self, env: LLMAgentEnv) -> str:
        name = self.demonstrators.get(env.spec.id if env.spec else "", "oracle")
        if self.max_oracle_actions is None and name == "oracle":
            return oracle_reply(env)
        limit = min(self.max_oracle_actions or env.max_actions_per_turn, env.max_actions_per_turn)
        game = env.game.unwrapped
        turn = getattr(game, DEMONSTRATORS[name], None)
        if turn is None:
            raise ValueError(f"{env.spec.id if env.spec else type(game).__name__} has no {name!r} demonstrator")
        actions = turn(env.turns_left, env.actions_left, limit)
        return env.write_reply(list(actions))

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[LLMAgentEnv] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        """``keys`` are ignored: demonstrations draw from the policy's one stream."""
        envs = _agent_envs(envs, len(conversations), "NoisyOraclePolicy")
        out = []
        for env in envs:
            if self.random.rng.random() < self.epsilon:
                out.append(Generation(random_reply(env, self.random.rng, max_actions=self.random.max_actions)))
            else:
                out.append(Generation(self._oracle(env)))
        return out
