"""Rollouts: env groups, generation backends (policies), trajectories and their token view.

Light imports only here; the model backends live in their own modules and import torch / vLLM / HTTP code when
used: :mod:`agentgym_bench.rollout.hf` (``HFPolicy``), :mod:`agentgym_bench.rollout.openai_compat`
(``OpenAIPolicy``), :mod:`agentgym_bench.rollout.vllm_backend` (``VLLMPolicy``). The default model and its warm
start are trainers (``trainers.default_model``, ``trainers.warmstart``).
"""

from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.policy import Generation, Message, Policy
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy, RandomPolicy
from agentgym_bench.rollout.tokens import TokenView, collate, step_token_views, trajectory_token_view
from agentgym_bench.rollout.trajectory import Trajectory, Turn, build_messages, read_jsonl, write_jsonl
from agentgym_bench.seeds import TRAIN_SEED_START, VALIDATION_SEED_START

__all__ = [
    "TRAIN_SEED_START", "VALIDATION_SEED_START", "EnvGroups", "Generation", "Message", "NoisyOraclePolicy",
    "OraclePolicy", "Policy", "RandomPolicy", "TokenView", "Trajectory", "Turn", "build_messages", "collate",
    "read_jsonl", "step_token_views", "trajectory_token_view", "write_jsonl",
]
