"""Warm-start (imitation) steps of the default model on one torch thread vs two.

Run:  .venv/bin/python benchmarks/warmstart_threads.py [--steps 20] [--rounds 3]

Builds the untrained default model in a temporary folder, takes Sokoban demonstration rows (the bulk of the default
warm start), and times ``--steps`` optimiser steps of ``warmstart.finetune``'s inner loop (reply loss, backward,
clipping, AdamW; batch 128) on 1 thread, then 2, alternating for ``--rounds`` rounds; prints the best round of each
(seconds a step) and their ratio. Run it on otherwise idle cores: a second thread only helps on a free core.
Results: benchmarks/warmstart_threads.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from agentgym_bench.rollout.default_model import build_default_model, load_model
from agentgym_bench.rollout.tokens import collate, step_token_views
from agentgym_bench.rollout.warmstart import WarmStartConfig, collect_demonstrations, reply_loss


def seconds_per_step(model, optimizer, batches) -> float:
    start = time.perf_counter()
    for batch in batches:
        loss = reply_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return (time.perf_counter() - start) / len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and thread count")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        model, tokenizer = load_model(build_default_model(folder))
    episodes = args.steps * args.batch_size // 3 + 1  # ~3.2 turns an episode
    views = [v for t in collect_demonstrations(WarmStartConfig(envs=("AgentSokoban-v0",), episodes=episodes))
             for v in step_token_views(t, tokenizer)]
    batches = [collate(views[i : i + args.batch_size], tokenizer.pad_token_id)
               for i in range(0, args.steps * args.batch_size, args.batch_size)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    before = torch.get_num_threads()
    best = {1: float("inf"), 2: float("inf")}
    try:
        torch.set_num_threads(1)
        seconds_per_step(model, optimizer, batches[:3])  # warm-up
        for _ in range(args.rounds):
            for threads in best:
                torch.set_num_threads(threads)
                best[threads] = min(best[threads], seconds_per_step(model, optimizer, batches))
    finally:
        torch.set_num_threads(before)
    tokens = sum(int(b["attention_mask"].sum()) for b in batches) / len(batches)
    print(f"{len(batches)} steps of batch {args.batch_size} (~{tokens:.0f} tokens a step), best of {args.rounds}")
    print("| threads | s/step |\n|---|---|")
    for threads, seconds in best.items():
        print(f"| {threads} | {seconds:.3f} |")
    print(f"two threads / one: {best[1] / best[2]:.2f}x faster")


if __name__ == "__main__":
    main()
