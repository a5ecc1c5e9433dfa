"""Where an RL iteration's time goes, and what sharing identical rows saves: rollout, scoring, update.

Runs real iterations of a recipe (default: the main job's ``baseline-starpo`` and the issue-59 mix
``pilot-starpo-mix8-ds``) from a model (default: the published checkpoint the main job's RL starts from), through the
trainer's own ``run_iteration`` (no validation, no checkpoints), and reads each iteration's ``time/rollout``,
``time/score`` (the scoring passes) and ``time/update`` (everything after the rollout; the update proper is
``time/update - time/score``).

Four sides, alternating in rounds, each (recipe, side, round) in its own subprocess on ``--threads`` torch threads:

- ``every-row``: every row of a batch through the model: the trainer's forwards without
  :func:`trainers.rl.ppo.distinct_rows` (identity instead) or shared prompts, and the sampler's prefill over every
  prompt (``HFPolicy.share_prefill = False``);
- ``distinct-rows``: identical rows (tokens, padding and loss mask) forwarded once in the scoring and update passes,
  identical prompts prefilled once in generation, but each distinct row forwarded whole
  (:func:`trainers.rl.ppo.may_share_prompts` false: the code of 2026-11-28);
- ``shared``: besides, the distinct rows' shared prompts run once in the scoring and update passes
  (:func:`agentgym_bench.rollout.heads.logits_at_shared_prefixes`), and the update's mini-batches keep a prompt's
  rows together (the code of 2026-12-01 morning);
- ``idle-rows``: the code as it is: besides, where the loss allows (no entropy bonus, no KL loss: GiGPO's recipe),
  rows whose advantages are all 0 go through the update's forward without gradient
  (:func:`trainers.rl.ppo.rows_without_gradient`).

With ``--flops`` each recipe's sides also run once more under torch's FLOP counter (``FlopCounterMode``: matrix
products and attention, as torch counts them, the CPU attention kernel mapped to torch's own formula), which does not
change the arithmetic, so that run plays the same iterations as a timed one; the report adds each part's GFLOP a
iteration and its rate (median FLOPs over median seconds), to read against the matmul peak of
``benchmarks/warmstart_peak.py``.

Both sides start from the same weights and seeds, so their first rollout is the same episodes; after the first
update their weights differ by round-off, and so may later episodes. Reported per side: the median over iterations
2..N of each part, the rows and distinct rows of the iteration's batch, and per round the ratios of the sides.

    .venv/bin/python benchmarks/iteration_split.py [--recipes baseline-starpo pilot-starpo-mix8-ds]
        [--model DIR] [--iterations 6] [--rounds 3] [--threads 1] [--flops]

Results: benchmarks/iteration_split.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIDES = ("every-row", "distinct-rows", "shared", "idle-rows")
PARTS = ("rollout", "score", "update proper", "iteration")


def flop_counter():
    """torch's FLOP counter, with the CPU attention kernels (which it does not know) counted by its sdpa formulas."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    aten = torch.ops.aten
    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *_, **__: sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda grad, q, k, v, *_, **__: sdpa_backward_flop_count(grad, q, k, v)})


def counted(function, flops: list[float]):
    """``function``, appending the FLOPs of each call to ``flops``."""
    def wrapper(*args, **kwargs):
        with flop_counter() as counter:
            result = function(*args, **kwargs)
        flops.append(counter.get_total_flops())
        return result
    return wrapper


def worker(args: argparse.Namespace) -> dict:
    import torch

    import agentgym_bench  # noqa: F401  (registers the envs)
    import trainers.rl.ppo
    from agentgym_bench.rollout.heads import shared_prefixes
    from trainers.rl.config import load_config
    from trainers.rl.train import build_samples, run_iteration, start_run
    from trainers.runtime.config_loading import resolve_config
    from trainers.runtime.distributed import Dist

    torch.set_num_threads(args.threads)
    every_row = args.side == "every-row"
    distinct_rows = trainers.rl.ppo.distinct_rows
    if args.side != "idle-rows":
        trainers.rl.ppo.rows_without_gradient = lambda *_: None
    if args.side not in ("shared", "idle-rows"):
        trainers.rl.ppo.may_share_prompts = lambda *_: False
    if every_row:
        trainers.rl.ppo.distinct_rows = lambda *t: (torch.arange(len(t[0])), torch.arange(len(t[0])))
    with tempfile.TemporaryDirectory() as out:
        config = load_config(resolve_config(args.recipe), {
            "pretrain": args.model, "output_dir": out, "eval_steps": 10**6, "save_steps": 0,
            "max_steps": 10**6, "progress": False})
        run = start_run(config, Dist(0, 1, torch.device("cpu")), time.perf_counter())
        if every_row:
            run.sampler.train_backend.share_prefill = False
        rows, distinct, prompts = [], [], []
        capture = build_samples

        def counting(*a, **k):  # the rows of each iteration's batch, and how many are distinct
            samples = capture(*a, **k)
            rows.append(len(samples))
            first = distinct_rows(samples.input_ids, samples.attention_mask, samples.loss_mask)[0]
            distinct.append(len(first))
            prompts.append(len(shared_prefixes(samples.input_ids[first], samples.attention_mask[first],
                                               samples.loss_mask[first, 1:])[1]))
            return samples

        import trainers.rl.train

        trainers.rl.train.build_samples = counting
        flops: dict[str, list[float]] = {"rollout": [], "score": [], "update proper": []}
        if args.flops:
            for part, name in (("rollout", "play_pool"), ("score", "score_samples"), ("update proper", "ppo_update")):
                setattr(trainers.rl.train, name, counted(getattr(trainers.rl.train, name), flops[part]))
        records = [run_iteration(run, step) for step in range(1, args.iterations + 1)]
        run.train_groups.close()
        run.val_groups.close()
    timed = records[1:]  # the first iteration warms up
    if args.flops:
        return {part: statistics.median(f[1:]) for part, f in flops.items()}
    return {"rollout": statistics.median(r["time/rollout"] for r in timed),
            "score": statistics.median(r["time/score"] for r in timed),
            "update proper": statistics.median(r["time/update"] - r["time/score"] for r in timed),
            "iteration": statistics.median(r["time/rollout"] + r["time/update"] for r in timed),
            "rows": statistics.median(rows[1:]), "distinct": statistics.median(distinct[1:]),
            "prompts": statistics.median(prompts[1:]),
            "success": statistics.mean(r["reward/success"] for r in records)}


def run_side(args: argparse.Namespace, recipe: str, side: str, flops: bool = False) -> dict:
    command = [sys.executable, __file__, "--worker", "--recipe", recipe, "--side", side, "--model", args.model,
               "--iterations", str(args.iterations), "--threads", str(args.threads)] + ["--flops"] * flops
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def span(values: list[float]) -> str:
    return f"**{statistics.median(values):.2f}x** ({min(values):.2f}-{max(values):.2f})"


def report(recipe: str, rows: dict[str, list[dict]], flops: dict[str, dict]) -> None:
    print(f"\n{recipe}: seconds an iteration (median of iterations 2..N, then median over rounds)")
    print("| side | rows (distinct rows; their distinct prompts) | rollout | scoring | update proper | iteration |")
    print("|---|---|---|---|---|---|")
    for side, r in rows.items():
        parts = " | ".join(f"{statistics.median(x[p] for x in r):.2f}" for p in PARTS)
        print(f"| {side} | {statistics.median(x['rows'] for x in r):.0f} "
              f"({statistics.median(x['distinct'] for x in r):.0f}; {statistics.median(x['prompts'] for x in r):.0f})"
              f" | {parts} |")
    for side in rows:
        if side != "shared" and "shared" in rows:
            pairs = list(zip(rows[side], rows["shared"], strict=True))
            print(f"{side} / shared, per round: " + ", ".join(
                f"{p} {span([a[p] / b[p] for a, b in pairs])}" for p in PARTS))
    for side, runs in rows.items():
        update = statistics.median(x["score"] + x["update proper"] for x in runs)
        rollout = statistics.median(x["rollout"] for x in runs)
        print(f"{side}: update (scoring + update proper) / rollout = {update / rollout:.2f}")
    for side, counts in flops.items():
        rates = ", ".join(f"{p} {counts[p] / 1e9:.1f} GFLOP at "
                          f"{counts[p] / 1e9 / statistics.median(x[p] for x in rows[side]):.1f} GFLOP/s"
                          for p in PARTS[:3])
        update = counts["score"] + counts["update proper"]
        print(f"{side}: {rates}; update (scoring + update proper) / rollout in FLOPs = "
              f"{update / counts['rollout']:.2f}")


def model_or_published(parser: argparse.ArgumentParser, model: str | None) -> str:
    """``--model``, or else this clone's published checkpoint (a parser error where it has none)."""
    if model is not None:
        return model
    from agentgym_bench.paths import published_checkpoint

    found = published_checkpoint(Path(__file__).parent)
    if found is None:
        parser.error("this clone has no published checkpoint: pass --model DIR")
    return str(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipes", nargs="+", default=["baseline-starpo", "pilot-starpo-mix8-ds"],
                        help="bundled recipe names or YAML files (default: baseline-starpo pilot-starpo-mix8-ds)")
    parser.add_argument("--model", default=None, help="model folder (default: the published checkpoint)")
    parser.add_argument("--iterations", type=int, default=6, help="iterations per run, the first not timed "
                        "(default: 6)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per recipe (default: 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES),
                        help="which sides to run (default: all four)")
    parser.add_argument("--flops", action="store_true", help="also count each part's FLOPs (one more, untimed run "
                        "a side) and report its rate")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--recipe", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.iterations < 2:
        parser.error("--rounds must be at least 1 and --iterations at least 2 (the first is not timed)")
    args.model = model_or_published(parser, args.model)
    if args.worker:
        print(json.dumps(worker(args)))
        return
    for recipe in args.recipes:
        rows: dict[str, list[dict]] = {side: [] for side in args.sides}
        for k in range(args.rounds):
            for side in args.sides if k % 2 == 0 else args.sides[::-1]:
                rows[side].append(run_side(args, recipe, side))
                print(f"{recipe} round {k + 1} {side}: " + ", ".join(
                    f"{p} {rows[side][-1][p]:.2f}s" for p in PARTS), file=sys.stderr, flush=True)
        flops = {side: run_side(args, recipe, side, flops=True) for side in args.sides} if args.flops else {}
        report(recipe, rows, flops)


if __name__ == "__main__":
    main()
