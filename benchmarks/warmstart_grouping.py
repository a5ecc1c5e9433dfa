"""Warm-start steps on WebShop demonstrations: batches of random rows vs batches grouped by length.

Run:  .venv/bin/python benchmarks/warmstart_grouping.py [--episodes 120] [--batch-size 64] [--rounds 2]

Builds the untrained default model in a temporary folder, takes the oracle's WebShop demonstration rows of
``--episodes`` training goals (compact prompt, history 0: a search page of ~110 tokens, a results page of ~850,
product pages of ~350), and times one pass over them (``warmstart.finetune``'s inner loop: reply loss, backward,
clipping, AdamW) with the batches of ``warmstart.epoch_batches`` as a warm start takes them by default and with
``--group-by-length``, alternating for ``--rounds`` rounds on two threads; prints the best round of each, the
tokens a pass computes (rows padded to the longest of their batch) and the ratios. Run it on otherwise idle cores.
Results: benchmarks/warmstart_grouping.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from agentgym_bench.rollout.hf import load_model
from agentgym_bench.rollout.tokens import collate, step_token_views
from trainers.sft.default_model import build_default_model
from trainers.sft.sft_config import SFTConfig
from trainers.sft.warmstart import collect_demonstrations, epoch_batches, reply_loss


def seconds_per_pass(model, optimizer, batches) -> float:
    start = time.perf_counter()
    for batch in batches:
        loss = reply_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=120, help="WebShop training goals demonstrated")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as folder:
        model, tokenizer = load_model(build_default_model(folder))
    demonstrations = collect_demonstrations(SFTConfig(envs=("AgentWebShop-v0",), episodes=args.episodes))
    views = [v for t in demonstrations for v in step_token_views(t, tokenizer)]
    lengths = [len(v) for v in views]
    ways = {}
    for grouped in (False, True):
        order = epoch_batches(lengths, args.batch_size, torch.Generator().manual_seed(0), grouped)
        ways[grouped] = [collate([views[i] for i in rows], tokenizer.pad_token_id) for rows in order]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    seconds_per_pass(model, optimizer, ways[False][:2])  # warm-up
    best = {False: float("inf"), True: float("inf")}
    for _ in range(args.rounds):
        for grouped, batches in ways.items():
            best[grouped] = min(best[grouped], seconds_per_pass(model, optimizer, batches))
    tokens = {grouped: sum(b["input_ids"].numel() for b in batches) for grouped, batches in ways.items()}
    print(f"{len(views)} rows of {args.episodes} episodes ({sum(lengths):,} tokens unpadded), "
          f"{len(ways[False])} steps of batch {args.batch_size}, best of {args.rounds}, two threads")
    print("| batches | tokens a pass (padded) | s a pass | s a step |\n|---|---|---|---|")
    for grouped, name in ((False, "random rows (default)"), (True, "grouped by length")):
        print(f"| {name} | {tokens[grouped]:,} | {best[grouped]:.1f} | {best[grouped] / len(ways[grouped]):.2f} |")
    print(f"grouped / random: tokens {tokens[True] / tokens[False]:.2f}, time {best[True] / best[False]:.2f} "
          f"({best[False] / best[True]:.2f}x faster)")


if __name__ == "__main__":
    main()
