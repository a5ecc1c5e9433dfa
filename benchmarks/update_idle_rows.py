"""The PPO update on identical batches, with the rows whose advantages are all 0 forwarded without gradient and with
every row forwarded with it (:func:`trainers.rl.ppo.rows_without_gradient`).

``iteration_split.py --sides shared idle-rows`` compares whole iterations, but after the first update the two sides
play different episodes (the same math in another order of float sums), so their updates do not do the same work.
Here one run of the recipe (default: the main job's ``baseline-gigpo``, from the published checkpoint) plays
``--iterations`` iterations through the trainer's own ``run_iteration``; the batch each update received and the
weights and optimiser state it started from are kept, and then each kept batch (the first, a warm-up, excepted) is
updated again from that state by both sides, ``--rounds`` times each in alternating order, timing ``ppo_update``
alone. Reported per batch: its rows, the share of rows with all-zero advantages, each side's median seconds and
their ratio; then the median ratio.

    .venv/bin/python benchmarks/update_idle_rows.py [--recipe baseline-gigpo] [--model DIR] [--iterations 8]
        [--rounds 3] [--threads 1]

Results: benchmarks/iteration_split.md ("Rows without gradient").
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time

from iteration_split import model_or_published


def kept_updates(args: argparse.Namespace) -> tuple[object, list[tuple[dict, dict, object]]]:
    """Play the recipe's iterations; return the run and, for each update, (weights, optimiser state, batch) as it
    received them."""
    import torch

    import agentgym_bench  # noqa: F401  (registers the envs)
    import trainers.rl.train
    from trainers.rl.config import load_config
    from trainers.runtime.config_loading import resolve_config
    from trainers.runtime.distributed import Dist

    kept = []
    update = trainers.rl.train.ppo_update

    def keeping(config, models, optimizers, batch, *rest, **kwargs):
        kept.append((copy.deepcopy(models.actor_module.state_dict()), copy.deepcopy(optimizers["actor"].state_dict()),
                     copy.deepcopy(batch)))
        return update(config, models, optimizers, batch, *rest, **kwargs)

    trainers.rl.train.ppo_update = keeping
    with tempfile.TemporaryDirectory() as out:
        config = load_config(resolve_config(args.recipe), {
            "pretrain": args.model, "output_dir": out, "eval_steps": 10**6, "save_steps": 0, "max_steps": 10**6,
            "progress": False})
        run = trainers.rl.train.start_run(config, Dist(0, 1, torch.device("cpu")), time.perf_counter())
        for step in range(1, args.iterations + 1):
            trainers.rl.train.run_iteration(run, step)
        run.train_groups.close()
        run.val_groups.close()
    trainers.rl.train.ppo_update = update
    return run, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", default="baseline-gigpo", help="bundled recipe name or YAML file (default: "
                        "baseline-gigpo)")
    parser.add_argument("--model", default=None, help="model folder (default: the published checkpoint)")
    parser.add_argument("--iterations", type=int, default=8, help="iterations to play, the first update not "
                        "replayed (default: 8)")
    parser.add_argument("--rounds", type=int, default=3, help="timed updates per side and batch (default: 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    args = parser.parse_args()
    if args.iterations < 2 or args.rounds < 1:
        parser.error("--iterations must be at least 2 (the first update is not replayed) and --rounds at least 1")
    args.model = model_or_published(parser, args.model)
    import numpy as np
    import torch

    import trainers.rl.ppo
    from trainers.runtime.distributed import Dist

    torch.set_num_threads(args.threads)
    run, kept = kept_updates(args)
    sides = {"idle-rows": trainers.rl.ppo.rows_without_gradient, "every-row": lambda *_: None}
    ratios = []
    print("| batch | rows | all-zero advantages | every row with gradient | idle rows without | ratio |")
    print("|---|---|---|---|---|---|")
    for k, (weights, optimizer, batch) in enumerate(kept[1:], start=2):
        seconds: dict[str, list[float]] = {side: [] for side in sides}
        for r in range(args.rounds):
            for side in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                trainers.rl.ppo.rows_without_gradient = sides[side]
                run.models.actor_module.load_state_dict(weights)
                run.optimizers["actor"].load_state_dict(optimizer)
                replayed = copy.deepcopy(batch)
                start = time.perf_counter()
                trainers.rl.ppo.ppo_update(run.config, run.models, run.optimizers, replayed,
                                           Dist(0, 1, torch.device("cpu")), np.random.default_rng(k))
                seconds[side].append(time.perf_counter() - start)
        idle, every = (statistics.median(seconds[s]) for s in ("idle-rows", "every-row"))
        zero = float((~(batch.advantages != 0).any(1)).float().mean())
        ratios.append(idle / every)
        print(f"| {k} | {len(batch)} | {zero:.2f} | {every:.3f} s | {idle:.3f} s | {idle / every:.2f} |", flush=True)
    print(f"\nidle rows / every row: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
