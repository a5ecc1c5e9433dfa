"""The LLM-agent layer: the env wrapper, reply parsing, prompt templates, and model-free reply writers.

- ``env.py``: ``LLMAgentEnv``, any Gymnasium text env as an LLM-agent env (prompt text in, raw model reply out);
- ``parsing.py``: a reply parsed into actions, and replies written in the same format;
- ``prompts.py``: the prompt templates, the words around a game's state;
- ``tools.py``: tool calls as an action format (the env's actions as one OpenAI-style function tool);
- ``policies.py``: reply writers that need no model: the oracle and a uniformly random valid-action agent.
"""

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.agent.parsing import ParsedReply, format_reply, parse_reply
from agentgym_bench.agent.policies import oracle_reply, random_reply
from agentgym_bench.agent.prompts import COMPACT, RAGEN, PromptTemplate

__all__ = ["COMPACT", "RAGEN", "LLMAgentEnv", "ParsedReply", "PromptTemplate", "format_reply", "oracle_reply",
           "parse_reply", "random_reply"]
