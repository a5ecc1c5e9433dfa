"""Warm-start (imitation) steps of the default model on one torch thread, two threads, and two one-thread processes.

Run:  .venv/bin/python benchmarks/warmstart_threads.py [--steps 20] [--rounds 3] [--load 0]

Builds the untrained default model in a temporary folder, takes Sokoban demonstration rows (the bulk of the default
warm start), and times ``--steps`` optimiser steps of ``warmstart.fit``'s inner loop (reply loss, backward,
clipping, AdamW; batch 128) on 1 thread, on 2 threads, and data-parallel on two processes of one thread each over
gloo (``warmstart --processes 2``: each process half of every batch, one all_reduce a step), alternating for
``--rounds`` rounds; prints the best round of each (seconds a step) and the ratios. ``--load N`` runs N busy-looping
processes beside the timed ones (cores shared with other work). Results: benchmarks/warmstart_threads.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

import torch

from agentgym_bench.rollout.hf import load_model
from agentgym_bench.rollout.tokens import collate, step_token_views
from trainers.runtime.launch import free_port
from trainers.sft.default_model import build_default_model
from trainers.sft.sft_config import SFTConfig
from trainers.sft.warmstart import (
    collect_demonstrations,
    pack_rows,
    reply_loss,
    shard_step,
    unpack_rows,
)


def seconds_per_step(model, optimizer, batches) -> float:
    start = time.perf_counter()
    for batch in batches:
        loss = reply_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return (time.perf_counter() - start) / len(batches)


def data_parallel_seconds(folder: str, rows_file: Path, steps: int, batch_size: int, profile: bool = False):
    """Seconds a step of two one-thread processes sharing each batch (:func:`shard_step`), best of one round; with
    ``profile``, ``(seconds, table)``: process 0's timed steps under torch's profiler, its ops by self time."""
    port = free_port()
    context = multiprocessing.get_context("spawn")
    queue = context.SimpleQueue()
    workers = [context.Process(target=_worker, args=(rank, port, folder, rows_file, steps, batch_size, queue,
                                                     profile)) for rank in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return queue.get()


def _worker(rank: int, port: int, folder: str, rows_file: Path, steps: int, batch_size: int, queue,
            profile: bool = False) -> None:
    import contextlib

    import torch.distributed as dist
    from torch.profiler import profile as profiler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    model, tokenizer = load_model(folder)
    rows = unpack_rows(torch.load(rows_file))
    batches = [collate(rows[i : i + batch_size][rank::2], tokenizer.pad_token_id)
               for i in range(0, (steps + 3) * batch_size, batch_size)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    def step(batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        shard_step(model, batch)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    for batch in batches[:3]:  # warm-up steps
        step(batch)
    dist.barrier()
    with profiler() if profile and rank == 0 else contextlib.nullcontext() as watch:
        start = time.perf_counter()
        for batch in batches[3:]:
            step(batch)
        seconds = (time.perf_counter() - start) / steps
    if rank == 0:
        queue.put((seconds, op_table(watch)) if profile else seconds)
    dist.destroy_process_group()


def op_table(prof, rows: int = 12) -> str:
    """A profiler's ops by self CPU time, the top ``rows``."""
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def sokoban_setup(steps: int, batch_size: int):
    """The untrained default model in a temporary folder, with ``steps`` batches of Sokoban demonstration rows
    (and 3 more in ``rows.pt`` beside it, for the warm-up of the data-parallel workers): ``(folder, model, rows_file,
    batches)``."""
    folder = tempfile.mkdtemp()
    model, tokenizer = load_model(build_default_model(folder))
    episodes = (steps + 3) * batch_size // 3 + 1  # ~3.2 turns an episode
    views = [v for t in collect_demonstrations(SFTConfig(envs=("AgentSokoban-v0",), episodes=episodes))
             for v in step_token_views(t, tokenizer)]
    rows_file = Path(folder) / "rows.pt"
    torch.save(pack_rows(views), rows_file)
    batches = [collate(views[i : i + batch_size], tokenizer.pad_token_id)
               for i in range(0, steps * batch_size, batch_size)]
    return folder, model, rows_file, batches


def busy() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and thread count")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes beside the timed ones")
    args = parser.parse_args()
    folder, model, rows_file, batches = sokoban_setup(args.steps, args.batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    before = torch.get_num_threads()
    best = {"1 thread": float("inf"), "2 threads": float("inf"), "2 processes x 1 thread": float("inf")}
    load = [multiprocessing.get_context("fork").Process(target=busy, daemon=True) for _ in range(args.load)]
    for p in load:
        p.start()
    try:
        torch.set_num_threads(1)
        seconds_per_step(model, optimizer, batches[:3])  # warm-up
        for _ in range(args.rounds):
            for name, threads in (("1 thread", 1), ("2 threads", 2)):
                torch.set_num_threads(threads)
                best[name] = min(best[name], seconds_per_step(model, optimizer, batches))
            torch.set_num_threads(before)
            best["2 processes x 1 thread"] = min(best["2 processes x 1 thread"], data_parallel_seconds(
                folder, rows_file, args.steps, args.batch_size))
    finally:
        torch.set_num_threads(before)
        for p in load:
            p.terminate()
    tokens = sum(int(b["attention_mask"].sum()) for b in batches) / len(batches)
    print(f"{len(batches)} steps of batch {args.batch_size} (~{tokens:.0f} tokens a step), best of {args.rounds}, "
          f"{args.load} busy processes beside")
    print("| run | s/step | vs 1 thread |\n|---|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} | {best['1 thread'] / seconds:.2f}x |")
    print(f"two processes / two threads: {best['2 threads'] / best['2 processes x 1 thread']:.2f}x faster")


if __name__ == "__main__":
    main()
