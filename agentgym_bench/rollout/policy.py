"""The one narrow protocol every generation backend implements.

A batch of chat-message lists goes in; one :class:`Generation` per conversation comes out. Backends that have them
fill in the generated token ids and their log-probabilities. Policies that need no model (oracle, random) read the
agent env itself, so the rollout engine passes the envs alongside the messages; model backends ignore them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentgym_bench.agent.env import LLMAgentEnv

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@dataclass
class Generation:
    """One reply.

    Attributes:
        text: the reply as the env receives it.
        token_ids: the generated token ids (without the prompt), if the backend has them.
        logprobs: log-probability of each generated token under the sampling distribution, if available.
    """

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class Policy(Protocol):
    """A generation backend."""

    def generate(self, conversations: Sequence[list[Message]],
                 envs: Sequence[LLMAgentEnv] | None = None) -> list[Generation]:
        """Reply to each conversation (same order, same length)."""
        ...
