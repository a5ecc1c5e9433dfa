"""Shared fixtures of the trainer tests: a tiny model of the default model's architecture, warm-started for a few
seconds on oracle demonstrations so that its replies are mostly well formed and episode scores vary within a group
(the trainers then see non-zero advantages), and a small config around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TINY_ENV_KWARGS = {"prompt": "compact", "enable_think": False}


def build_tiny_model(path: Path) -> Path:
    """A 1-layer, width-32 GPT-2 with the default model's tokenizer (base words only), fine-tuned on 32 noisy-oracle
    FrozenLake episodes with the current observation as prompt (history 0)."""
    from trainers.sft.default_model import ModelSize, build_model, build_tokenizer, build_vocab
    from trainers.sft.sft_config import SFTConfig
    from trainers.sft.warmstart import collect_demonstrations, finetune

    tokenizer = build_tokenizer(build_vocab())
    model = build_model(len(tokenizer), pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id,
                        size=ModelSize(n_layer=1, n_embd=32, n_head=2, n_positions=256))
    config = SFTConfig(model=str(path), output=str(path), envs=("AgentFrozenLake-v0",), history=0,
                             episodes=32, epochs=12, batch_size=64, lr=1e-2, epsilon=0.3, env_kwargs=TINY_ENV_KWARGS)
    finetune(model, tokenizer, collect_demonstrations(config), config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


def tiny_config_dict(model: Path, output_dir: Path, preset: str, **overrides: Any) -> dict[str, Any]:
    """4 groups x 4 episodes of FrozenLake, 8-token replies, history 0, 3 iterations."""
    from trainers.runtime.config_loading import merge

    base = {
        "preset": preset, "pretrain": str(model), "output_dir": str(output_dir), "seed": 1,
        "max_steps": 3, "eval_steps": 2, "save_steps": 2, "progress": False,
        "rollout_batch_size": 16, "val_batch_size": 8, "ppo_mini_batch_size": 8, "micro_batch_size": 4,
        "max_new_tokens": 8, "learning_rate": 1e-3, "critic_learning_rate": 1e-3,
        "rollout_filter_ratio": 0.5 if preset == "starpo_s" else 1.0,
        "train_env_manager": {"num_env_groups": 4, "group_size": 4, "env_kwargs": TINY_ENV_KWARGS,
                              "history_length": 0},
        "val_env_manager": {"num_env_groups": 8, "group_size": 1, "env_kwargs": TINY_ENV_KWARGS,
                            "history_length": 0},
    }
    return merge(base, overrides)
