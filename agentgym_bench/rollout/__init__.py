"""Rollouts: env groups, generation backends (policies), trajectories and their token view.

- :mod:`.engine`: ``EnvGroups``, env groups played in lockstep with one batched policy call per turn;
- :mod:`.policy`: the one narrow protocol every generation backend implements;
- :mod:`.scripted`: policies that need no model (oracle, random, noisy oracle);
- :mod:`.specs`: policies named by one string (``oracle``, ``hf:PATH``, ...), the one parser that builds them;
- :mod:`.endpoint`: whether an OpenAI-compatible endpoint answers and serves the model, asked before a run;
- :mod:`.trajectory`: what happened in one episode, turn by turn, and the chat messages the model saw;
- :mod:`.tokens`: token views of trajectories, what a trainer feeds the model;
- :mod:`.heads`: the output head on chosen positions only;
- :mod:`.draws`: how far a recorded reply lies from a model's keyed draws (what binds a reply re-generation found
  different);
- the model backends: :mod:`.hf` (``HFPolicy``, Hugging Face transformers), :mod:`.openai_compat` (``OpenAIPolicy``,
  any OpenAI-compatible HTTP endpoint), :mod:`.vllm_backend` (``VLLMPolicy``).

Light imports only here; the model backends live in their own modules and import torch / vLLM / HTTP code when
used. The default model and its warm start are trainers (``trainers.sft.default_model``, ``trainers.sft.warmstart``).
"""

from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.policy import Generation, Message, Policy
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy, RandomPolicy
from agentgym_bench.rollout.tokens import (
    TokenView,
    collate,
    sampled_logprobs,
    step_token_views,
    trajectory_token_view,
)
from agentgym_bench.rollout.trajectory import Trajectory, Turn, build_messages, read_jsonl, write_jsonl
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START

__all__ = [
    "TRAIN_SEED_START", "VALIDATION_SEED_START", "EnvGroups", "Generation", "Message", "NoisyOraclePolicy",
    "OraclePolicy", "Policy", "RandomPolicy", "TokenView", "Trajectory", "Turn", "build_messages", "collate",
    "read_jsonl", "sampled_logprobs", "step_token_views", "trajectory_token_view", "write_jsonl",
]
