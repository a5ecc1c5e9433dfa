"""Run by tests/trainers/test_distributed.py, under ``torchrun --nproc_per_node 2`` or as one plain process.

``python ddp_check.py MODEL OUT [--loop]``: for StarPO-S (critic, filter, whitening) and GiGPO (step rows, KL loss,
batch adjustment), play one fixed batch of episodes (the same on every rank: a fixed sampler seed, all groups),
make one ``train_step`` (old log-probs scored in shares, 2 PPO epochs of 2 mini-batches, micro-batches of 2) and
save the updated parameters and the metrics to ``OUT/{preset}-world{N}.pt``. With ``--loop``, then run the whole
loop (``main``) for 2 iterations into ``OUT/loop``.
"""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import agentgym_bench  # noqa: E402,F401
from agentgym_bench.rollout.engine import EnvGroups  # noqa: E402
from agentgym_bench.rollout.hf import HFPolicy  # noqa: E402
from tests.trainers.conftest import TINY_ENV_KWARGS, tiny_config_dict  # noqa: E402
from trainers.config import config_from_dict  # noqa: E402
from trainers.distributed import init_distributed  # noqa: E402
from trainers.train import load_models, main, make_optimizers, train_step  # noqa: E402


def one_update(model: Path, out: Path, preset: str) -> None:
    config = config_from_dict(tiny_config_dict(model, out, preset, ppo_epochs=2, micro_batch_size=2,
                                               rollout_filter_ratio=1.0 if preset == "gigpo" else 0.5,
                                               ppo_mini_batch_size=4 if preset == "starpo_s" else 8))
    dist = init_distributed("cpu")
    models = load_models(config, dist)
    optimizers, _ = make_optimizers(config, models)
    groups = EnvGroups(["AgentFrozenLake-v0"], [4], 4, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    policy = HFPolicy(models.actor_module, models.tokenizer, max_new_tokens=8, seed=123)
    trajectories = groups.rollout(policy, history=0)
    metrics = train_step(config, models, optimizers, trajectories, dist, np.random.default_rng(7))
    if dist.is_main:
        state = {"actor": {k: v.clone() for k, v in models.actor_module.state_dict().items()}, "metrics": metrics}
        if models.critic is not None:
            state["critic"] = {k: v.clone() for k, v in models.critic_module.state_dict().items()}
        torch.save(state, out / f"{preset}-world{dist.world_size}.pt")


if __name__ == "__main__":
    model_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for name in ("starpo_s", "gigpo"):
        one_update(model_dir, out_dir, name)
    if "--loop" in sys.argv:
        main(config_from_dict(tiny_config_dict(model_dir, out_dir / "loop", "starpo_s", max_steps=2)))
