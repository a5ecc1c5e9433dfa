"""Train a model on AgentFrozenLake-v0 with TRL's GRPOTrainer: multi-turn episodes through ``rollout_func``.

    pip install -e '.[trl]'
    agentgym-bench init-model                      # the small local model (or pass --model any HF causal LM)
    python examples/trl_grpo_frozenlake.py --max-steps 2

Each dataset row names an episode (env id + training seed); TRL repeats it ``--num-generations`` times, and
:class:`agentgym_bench.adapters.trl.EpisodeRollout` plays those episodes from the same start with the trainer's
model, returning each as one token sequence whose env tokens are masked out of the loss. The reward is the env's
episode return. With the warm-started model (``agentgym-bench warmstart``) rewards vary within a group from the
start; an untrained model only earns format penalties, so every advantage is 0 until it learns the format.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from agentgym_bench.paths import model_dir
from agentgym_bench.seeds import TRAIN_SEED_START
from trainers.sft.default_model import build_default_model

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func prints an "experimental" warning otherwise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model folder or hub id (default: the warm-started local model "
                        "if present, else the default model, built if missing)")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8, help="completions per step")
    parser.add_argument("--num-generations", type=int, default=4, help="episodes per seed (one GRPO group)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--output", default=None, help="save the trained model here")
    args = parser.parse_args()

    import torch
    from trl import GRPOConfig, GRPOTrainer

    from agentgym_bench.adapters.trl import (  # noqa: PLC0415 - brings trl
        EpisodeRollout,
        checkpointing_off,
        env_reward,
        episode_dataset,
    )
    from agentgym_bench.rollout.hf import load_model  # noqa: PLC0415 - brings torch

    torch.set_num_threads(1)
    path = args.model
    if path is None:
        path = model_dir("warmstart") if os.path.isdir(model_dir("warmstart")) else model_dir("default")
        if not os.path.isdir(path):
            build_default_model(path)
    print(f"model: {path}")
    model, tokenizer = load_model(path)
    with tempfile.TemporaryDirectory() as scratch:
        config = GRPOConfig(output_dir=scratch, use_cpu=not torch.cuda.is_available(), bf16=False, report_to="none",
                            per_device_train_batch_size=args.batch_size, num_generations=args.num_generations,
                            max_completion_length=512, save_strategy="no", **checkpointing_off(),
                            max_steps=args.max_steps, logging_steps=1, learning_rate=args.lr, seed=0)
        trainer = GRPOTrainer(model=model, reward_funcs=[env_reward], args=config, processing_class=tokenizer,
                              train_dataset=episode_dataset("AgentFrozenLake-v0",
                                                            range(TRAIN_SEED_START, TRAIN_SEED_START + 1000)),
                              rollout_func=EpisodeRollout(env_kwargs={"prompt": "compact"}, max_new_tokens=16))
        trainer.train()
    for log in trainer.state.log_history:
        if "reward" in log:
            print(f"step {log['step']:>3}  reward {log['reward']:+.3f}  reward_std {log['reward_std']:.3f}  "
                  f"loss {log['loss']:+.4f}")
    if args.output:
        trainer.save_model(args.output)
        tokenizer.save_pretrained(args.output)
        print(f"saved to {args.output}")


if __name__ == "__main__":
    main()
