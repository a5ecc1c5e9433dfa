"""The warm start's FLOP rate against the machine's matmul peak at the model's shapes (issue 60's target: >= 70%).

Run:  .venv/bin/python benchmarks/warmstart_peak.py [--steps 20] [--rounds 3]

The untrained default model and the batches of benchmarks/warmstart_threads.py (batch 128 of Sokoban demonstration
rows). For each step it counts the FLOPs the step must do, on the real (unpadded) tokens only: for every linear layer
of the blocks ``2 * tokens * in * out``, causal attention ``2 * 2 * d * sum over rows of T(T+1)/2`` a layer, the
output head ``2 * M * d * V`` on the ``M`` positions that predict a reply token; backward twice the forward. It
times:

- **the peak**: the same linear layers' matrix products alone (``torch.mm`` at each layer's shapes for the step's
  token count: the forward and the backward's two products), on one thread, best of ``--rounds``: what the machine
  does at these shapes with nothing else in the way;
- **the warm start**: optimiser steps as ``warmstart`` runs them (reply loss, backward, clipping, AdamW), on one
  thread and on two one-thread processes (``--processes 2``), whose peak is read two ways: twice one thread's, and
  two one-thread processes running the products at the same time (what the two cores give when both work).

It prints the rates and each as a share of its peak. ``--profile`` then runs the steps once more under torch's
profiler, on one thread and as process 0 of two, and prints each one's ops by self time (where the time that is not
matrix products goes). Results: benchmarks/warmstart_peak.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import torch
from warmstart_threads import data_parallel_seconds, op_table, seconds_per_step, sokoban_setup

from trainers.runtime.launch import free_port


def linear_shapes(model) -> list[tuple[int, int]]:
    """``(in, out)`` of every linear layer of the blocks (GPT-2's ``Conv1D`` weights are ``(in, out)``)."""
    return [tuple(m.weight.shape) for m in model.transformer.h.modules() if type(m).__name__ == "Conv1D"]


def step_flops(model, batch) -> float:
    """Forward + backward FLOPs of one step on ``batch``'s real tokens (the module docstring's count)."""
    lengths = batch["attention_mask"].sum(dim=1).double()
    tokens = float(lengths.sum())
    d, vocab = model.config.n_embd, model.config.vocab_size
    linear = sum(2 * tokens * i * o for i, o in linear_shapes(model))
    attention = model.config.n_layer * 2 * 2 * d * float((lengths * (lengths + 1) / 2).sum())
    head = 2 * float(batch["loss_mask"][:, 1:].sum()) * d * vocab
    return 3 * (linear + attention + head)


def matmul_peak(shapes: list[tuple[int, int]], tokens: int, rounds: int) -> float:
    """FLOP/s of the layers' products alone on one thread: forward ``(N, in) @ (in, out)``, backward
    ``(N, out) @ (out, in)`` and ``(in, N) @ (N, out)``, best of ``rounds`` passes over all layers."""
    g = torch.Generator().manual_seed(0)
    work = []
    for i, o in shapes:
        x, w, dy = (torch.randn(tokens, i, generator=g), torch.randn(i, o, generator=g),
                    torch.randn(tokens, o, generator=g))
        work += [(x, w), (dy, w.t().contiguous()), (x.t().contiguous(), dy)]
    flops = sum(2 * a.shape[0] * a.shape[1] * b.shape[1] for a, b in work)
    best = float("inf")
    for _ in range(rounds + 1):  # the first pass warms up
        start = time.perf_counter()
        for a, b in work:
            torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return flops / best


def _peak_worker(shapes, tokens: int, rounds: int, queue) -> None:
    torch.set_num_threads(1)
    queue.put(matmul_peak(shapes, tokens, rounds))


def concurrent_peak(shapes: list[tuple[int, int]], tokens: int, rounds: int) -> float:
    """The sum of two one-thread processes' :func:`matmul_peak`, run at the same time: the two cores' peak when both
    work, which shared caches and clocks may hold below twice one core's."""
    context = multiprocessing.get_context("spawn")
    queue = context.SimpleQueue()
    workers = [context.Process(target=_peak_worker, args=(shapes, tokens, rounds, queue)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return queue.get() + queue.get()


def _allreduce_worker(rank: int, port: int, numel: int, repeats: int, queue) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    flat = torch.randn(numel, generator=torch.Generator().manual_seed(rank))
    times = []
    for _ in range(repeats + 3):  # the first three warm up
        dist.barrier()  # both arrive together: the time is the reduce's, not the wait for the peer
        start = time.perf_counter()
        dist.all_reduce(flat)
        times.append(time.perf_counter() - start)
    if rank == 0:
        queue.put(statistics.median(times[3:]))
    dist.destroy_process_group()


def allreduce_seconds(numel: int, repeats: int = 50) -> float:
    """Median seconds of one ``all_reduce`` of ``numel`` float32 values between two one-thread processes over gloo
    (:func:`trainers.sft.warmstart.shard_step`'s one reduce a step), each timed from a barrier so that waiting for
    the slower process is not counted: what overlapping it with the backward could save at most."""
    port = free_port()
    context = multiprocessing.get_context("spawn")
    queue = context.SimpleQueue()
    workers = [context.Process(target=_allreduce_worker, args=(rank, port, numel, repeats, queue)) for rank in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return queue.get()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--profile", action="store_true", help="then profile one thread and two processes' steps")
    parser.add_argument("--allreduce", action="store_true",
                        help="then time the gradient's all_reduce alone between two processes (what overlapping it "
                             "with the backward could save at most)")
    args = parser.parse_args()
    folder, model, rows_file, batches = sokoban_setup(args.steps, args.batch_size)
    flops = sum(step_flops(model, b) for b in batches) / len(batches)
    tokens = round(sum(float(b["attention_mask"].sum()) for b in batches) / len(batches))
    padded = sum(b["attention_mask"].numel() for b in batches) / len(batches)
    torch.set_num_threads(1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    seconds_per_step(model, optimizer, batches[:3])  # warm-up
    peak, peak2, one, two = 0.0, 0.0, float("inf"), float("inf")
    for _ in range(args.rounds):  # alternating, so a change in load hits all four
        peak = max(peak, matmul_peak(linear_shapes(model), tokens, 1))
        peak2 = max(peak2, concurrent_peak(linear_shapes(model), tokens, 1))
        one = min(one, seconds_per_step(model, optimizer, batches))
        two = min(two, data_parallel_seconds(folder, rows_file, args.steps, args.batch_size))
    print(f"{len(batches)} steps of batch {args.batch_size}: {tokens} real tokens a step ({padded:.0f} with "
          f"padding), {flops / 1e9:.2f} GFLOP a step (forward + backward, real tokens), best of {args.rounds}")
    print(f"matmul peak at the model's shapes: one thread {peak / 1e9:.1f} GFLOP/s, two one-thread processes at "
          f"once {peak2 / 1e9:.1f} GFLOP/s ({peak2 / peak:.2f}x one)")
    print("| run | s/step | GFLOP/s | share of one thread's peak | of twice it | of two processes' peak |")
    print("|---|---|---|---|---|---|")
    print(f"| 1 thread | {one:.3f} | {flops / one / 1e9:.1f} | {flops / one / peak:.0%} | | |")
    print(f"| 2 processes x 1 thread | {two:.3f} | {flops / two / 1e9:.1f} | | {flops / two / (2 * peak):.0%} | "
          f"{flops / two / peak2:.0%} |")
    if args.allreduce:
        numel = sum(p.numel() for p in model.parameters() if p.requires_grad) + 2  # + the loss and token count
        reduce = allreduce_seconds(numel)
        print(f"\nthe gradient's all_reduce alone ({numel:,} float32 values, two processes, gloo, median of 50 from a "
              f"barrier): {reduce * 1e3:.2f} ms, {reduce / two:.1%} of a two-process step")
    if args.profile:
        from torch.profiler import profile

        with profile() as prof:
            seconds_per_step(model, optimizer, batches)
        print(f"\none thread, {len(batches)} steps under the profiler:\n{op_table(prof)}")
        seconds, table = data_parallel_seconds(folder, rows_file, args.steps, args.batch_size, profile=True)
        print(f"\nprocess 0 of two, {args.steps} steps under the profiler ({seconds:.3f} s/step):\n{table}")


if __name__ == "__main__":
    main()
