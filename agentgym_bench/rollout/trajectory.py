"""Trajectories: what happened in one episode, turn by turn, and the chat messages the model saw.

A :class:`Trajectory` is plain data (JSON-lines round trip with :func:`write_jsonl` / :func:`read_jsonl`). The
messages shown to the model at turn ``t`` are rebuilt from it by :meth:`Trajectory.messages`, the one function the
rollout engine also uses to build prompts, so token views reproduce exactly what the model read.

History window (``history``): ``None`` keeps the whole conversation (RAGEN's ``max_context_window = -1``); ``k >= 0``
keeps only the last ``k`` (observation, reply) pairs before the current observation (``0``: the current observation
alone, a Markov prompt). The system prompt, if any, is always kept. With a window the first observation (which
carries the ``ragen`` template's instructions) drops out after ``k`` turns, as in RAGEN.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agentgym_bench.rollout.policy import Message


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars/arrays, tuples and sets turned into JSON types (dict keys become strings)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, np.generic | np.ndarray):
        return json_safe(value.tolist())
    return str(value)


@dataclass
class Turn:
    """One agent turn.

    Attributes:
        observation: the user message the model read this turn (the env's observation).
        state_key: ``info["state_key"]`` of the state the model replied to (GiGPO anchor).
        reply: the raw reply sent to the env.
        actions: actions parsed from the reply (``info["actions"]``).
        executed_actions: actions the game executed (``info["executed_actions"]``).
        reward: the turn's reward (format penalty included).
        info: the env's step info (JSON-safe copy).
        token_ids: generated token ids (stop token included if one was sampled), if the policy had them.
        logprobs: their log-probabilities under the sampling distribution, if the policy had them.
        prompt_tokens / completion_tokens: what the turn cost in tokens, where the backend reports it.
    """

    observation: str
    state_key: str
    reply: str
    actions: list[str]
    executed_actions: list[str]
    reward: float
    info: dict[str, Any] = field(default_factory=dict)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Trajectory:
    """One episode.

    Attributes:
        env_id: the Gymnasium id.
        env_kwargs: keyword arguments of ``gym.make`` (besides the id).
        tag: the env group tag (ROLL's ``tags``); the env id unless given otherwise.
        seed: the reset seed.
        group: index of the env group in its batch; members of a group share the seed.
        system_prompt: ``info["system_prompt"]`` from reset (``""``: no system message).
        history: the history window used to build prompts (``None``: full conversation).
        turns: the turns, in order.
        final_observation: the observation after the last turn (never shown to the model).
        success: ``info["success"]`` at the end.
        terminated / truncated: how the episode ended.
        tools: ``info["tools"]`` from reset: the OpenAI tools the model was offered (an agent env in tool format;
            ``[]`` otherwise), rendered into every prompt by the chat template.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    tag: str
    seed: int
    group: int
    system_prompt: str
    history: int | None
    turns: list[Turn] = field(default_factory=list)
    final_observation: str = ""
    success: bool = False
    terminated: bool = False
    truncated: bool = False
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def episode_reward(self) -> float:
        """Sum of the turn rewards."""
        return float(sum(t.reward for t in self.turns))

    @property
    def group_key(self) -> str:
        """Identifies the env group across batches: ``"{tag}_{group}_{seed}"`` (ROLL's ``traj_group_id``)."""
        return f"{self.tag}_{self.group}_{self.seed}"

    def messages(self, turn: int) -> list[Message]:
        """The chat messages the model saw before replying at ``turn`` (0-based), with the trajectory's window.

        ``turn == len(turns)`` gives the messages after the last reply, ending with the final observation.
        """
        if not 0 <= turn <= len(self.turns):
            raise ValueError(f"turn={turn} out of range for a trajectory of {len(self.turns)} turns")
        observations = [t.observation for t in self.turns[:turn]]
        current = self.turns[turn].observation if turn < len(self.turns) else self.final_observation
        return build_messages(self.system_prompt, observations, [t.reply for t in self.turns[:turn]], current,
                              self.history)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        data = dict(data)
        data["turns"] = [Turn(**t) for t in data.get("turns", [])]
        return cls(**data)


def build_messages(system_prompt: str, observations: list[str], replies: list[str], current: str,
                   history: int | None) -> list[Message]:
    """Chat messages: optional system message, past (observation, reply) pairs cut to the last ``history`` (all if
    ``None``), then the current observation."""
    if history is not None and (not isinstance(history, int) or history < 0):
        raise ValueError(f"history={history!r} must be None (full conversation) or an integer >= 0")
    if len(observations) != len(replies):
        raise ValueError("observations and replies must have the same length")
    pairs = list(zip(observations, replies, strict=True))
    if history is not None:
        pairs = pairs[len(pairs) - history:] if history else []
    messages: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for observation, reply in pairs:
        messages += [{"role": "user", "content": observation}, {"role": "assistant", "content": reply}]
    messages.append({"role": "user", "content": current})
    return messages


def write_jsonl(path: str | os.PathLike, trajectories: Iterable[Trajectory], *, append: bool = False) -> None:
    """Write one JSON object per line."""
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for trajectory in trajectories:
            f.write(json.dumps(trajectory.to_dict(), ensure_ascii=False) + "\n")


def read_jsonl(path: str | os.PathLike) -> Iterator[Trajectory]:
    """Read trajectories written by :func:`write_jsonl`."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield Trajectory.from_dict(json.loads(line))
