"""agentgym-bench: Gymnasium text environments for LLM agents, an LLM-agent wrapper, rollouts, trainers and a
verified leaderboard.

``import agentgym_bench`` registers every id with Gymnasium::

    import gymnasium as gym
    import agentgym_bench

    env = gym.make("AgentSokoban-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<think>...</think><answer>Up || Left</answer>")
"""

from agentgym_bench.agent import LLMAgentEnv
from agentgym_bench.multiagent.registration import register_textarena_envs
from agentgym_bench.registration import AGENT_ENVS, register_all

__version__ = "0.1.0"

register_all()
register_textarena_envs()  # only where textarena is importable

__all__ = ["AGENT_ENVS", "LLMAgentEnv", "__version__"]
