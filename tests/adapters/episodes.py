"""Native reference episodes: what ``gym.make(env_id).reset(seed)`` + ``step(reply)`` give, for adapters to match."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import agentgym_bench  # noqa: F401
from agentgym_bench.agent import random_reply
from agentgym_bench.rollout.trajectory import json_safe

GARBAGE = ["", "Up Up Up", "<answer>Fly</answer>", "<answer>" + "x" * 5000, "\x00\udcff<think>", "<answer>||</answer>"]


def scripted_replies(env_id: str, seed: int, rng_seed: int, **env_kwargs: Any) -> list[str]:
    """Replies for one whole episode: random valid moves, every third turn a malformed reply."""
    env = gym.make(env_id, **env_kwargs).unwrapped
    rng = np.random.default_rng(rng_seed)
    env.reset(seed=seed)
    replies, done = [], False
    while not done:
        if len(replies) % 3 == 2:
            reply = GARBAGE[int(rng.integers(len(GARBAGE)))]
        else:
            reply = random_reply(env, rng, max_actions=3)
        replies.append(reply)
        *_, terminated, truncated, _ = env.step(reply)
        done = terminated or truncated
    return replies


def native_episode(env_id: str, seed: int, replies: list[str], **env_kwargs: Any) -> list[tuple]:
    """``[(obs, None, False, False, info)]`` after reset, then ``(obs, reward, terminated, truncated, info)`` per
    reply, infos JSON-safe (as they travel over the wire)."""
    env = gym.make(env_id, **env_kwargs)
    obs, info = env.reset(seed=seed)
    out = [(obs, None, False, False, json_safe(info))]
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        out.append((obs, float(reward), terminated, truncated, json_safe(info)))
    return out
