"""Run by tests/trainers/test_distributed.py, under ``torchrun --nproc_per_node 2`` or as one plain process.

``python ddp_check.py MODEL OUT [--loop] [--strategies ddp,fsdp2]``: for each strategy, for StarPO-S (critic,
filter, whitening) and GiGPO (step rows, KL loss, batch adjustment), play one fixed batch of episodes (the same on
every rank: a fixed sampler seed, all groups), make one ``train_step`` (old log-probs scored in shares, 2 PPO epochs
of 2 mini-batches, micro-batches of 2) and save the updated parameters and the metrics to
``OUT/{preset}-world{N}[-fsdp2].pt``. With ``--loop``, then run the whole loop (``main``) for 2 iterations into
``OUT/loop-{strategy}``.

``python ddp_check.py MODEL OUT --loop-run NAME [key=value ...]``: only the loop, with the tiny StarPO-S config and
the given overrides, into ``OUT/NAME`` (the resume check kills and restarts such a run).
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
from trainers.rl.config import config_from_dict  # noqa: E402
from trainers.rl.models import load_models, make_optimizers  # noqa: E402
from trainers.rl.train import main, train_step  # noqa: E402
from trainers.runtime import fsdp  # noqa: E402
from trainers.runtime.config_loading import parse_overrides  # noqa: E402
from trainers.runtime.distributed import init_distributed  # noqa: E402


def one_update(model: Path, out: Path, preset: str, strategy: str = "ddp") -> None:
    # GiGPO without the KL loss (as the shipped recipe) and here without its step advantage, so that the rows of a
    # group whose episodes scored alike carry no advantage and go through the forward without gradient
    # (trainers.rl.ppo.rows_without_gradient; not with FSDP2); StarPO-S scores with the reference model
    keys = ({"rollout_filter_ratio": 1.0, "use_kl_loss": False, "kl_loss_coef": 0.0, "step_reward_weight": 0.0,
             "ppo_mini_batch_size": 8} if preset == "gigpo"
            else {"rollout_filter_ratio": 0.5, "ppo_mini_batch_size": 4})
    config = config_from_dict(tiny_config_dict(model, out, preset, ppo_epochs=2, micro_batch_size=2,
                                               strategy=strategy, **keys))
    dist = init_distributed("cpu")
    models = load_models(config, dist)
    optimizers, _ = make_optimizers(config, models)
    groups = EnvGroups(["AgentFrozenLake-v0"], [4], 4, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    policy = HFPolicy(models.actor_module, models.tokenizer, max_new_tokens=8, seed=123)
    with fsdp.gathered(models.actor_module):  # a sharded actor generates from its whole weights
        trajectories = groups.rollout(policy, history=0)
    metrics = train_step(config, models, optimizers, trajectories, dist, np.random.default_rng(7))
    state = {"actor": fsdp.full_state_dict(models.actor_module), "metrics": metrics}
    if models.critic is not None:
        state["critic"] = fsdp.full_state_dict(models.critic_module)
    if dist.is_main:
        suffix = "-fsdp2" if strategy == "fsdp2" and dist.enabled else ""
        torch.save({k: v if k == "metrics" else {n: t.clone() for n, t in v.items()} for k, v in state.items()},
                   out / f"{preset}-world{dist.world_size}{suffix}.pt")


def option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if __name__ == "__main__":
    model_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    if option("--loop-run") is not None:
        overrides = [a for a in sys.argv[3:] if "=" in a]
        main(config_from_dict(tiny_config_dict(model_dir, out_dir / option("--loop-run"), "starpo_s"),
                              parse_overrides(overrides)))
        sys.exit(0)
    for strategy in option("--strategies", "ddp").split(","):
        for name in ("starpo_s", "gigpo"):
            one_update(model_dir, out_dir, name, strategy)
        if "--loop" in sys.argv:
            main(config_from_dict(tiny_config_dict(model_dir, out_dir / f"loop-{strategy}", "starpo_s", max_steps=2,
                                                   strategy=strategy)))
