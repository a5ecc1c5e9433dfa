"""The LLM-agent layer: the env wrapper, reply parsing, prompt templates, and model-free reply writers."""

from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.agent.parsing import ParsedReply, format_reply, parse_reply
from agentgym_bench.agent.policies import oracle_reply, random_reply
from agentgym_bench.agent.prompts import COMPACT, RAGEN, PromptTemplate

__all__ = ["COMPACT", "RAGEN", "LLMAgentEnv", "ParsedReply", "PromptTemplate", "format_reply", "oracle_reply",
           "parse_reply", "random_reply"]
