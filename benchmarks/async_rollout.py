"""Asynchronous rollouts (``async_rollout.max_staleness``) against the synchronous loop: speed, then learning.

Run:  .venv/bin/python benchmarks/async_rollout.py speed [--iterations 12] [--rounds 2] [--load 0]
      .venv/bin/python benchmarks/async_rollout.py learning [--iterations 100] [--seeds 0 1 2] [--work DIR]

Both train the main job's StarPO recipe (``baseline-starpo``: Sokoban 6x6, slippery and non-slippery FrozenLake and
Bandit, 128 episodes an iteration) from the published warm start (``leaderboards/agentgym-v2/models/
default-model-sft``) with ``agentgym-bench train``, in these settings:

- ``sync 1 thread``: the main job's setting (``num_threads: 1``, the sampler's log-probs as the old ones);
- ``sync 1 thread, recomputed``: the same, the old log-probs recomputed by a forward pass (what the asynchronous
  loop must do: it separates that pass's cost from the overlap's gain);
- ``sync 2 threads``: the same loop as the first with both cores (``num_threads=2``);
- ``async S=1``, ``async S=2``: ``async_rollout.max_staleness`` 1 or 2, a one-thread rollout worker beside the
  one-thread learner (``use_sampler_logprobs=false``, as the asynchronous loop requires).

``speed`` runs each setting for ``--iterations`` iterations (no validation but the one before training), alternating
for ``--rounds`` rounds, and reports the median seconds an iteration (``time/step`` of iterations 2 .. n-1: the first
waits for the worker's first batch, the last validates), iterations an hour, and trained reply tokens a second
(``rollout/samples`` x ``rollout/response_length`` / ``time/step``). ``--load N`` runs N busy-looping processes beside
(the cores shared with other work, as in the main job, which trains two runs at once).

``learning`` trains ``sync 2 threads``, ``async S=1`` and ``async S=2`` for ``--iterations`` iterations on each
training seed (the same number of samples for all), validated before, half way and after on the recipe's 1,024
validation episodes (256 a env), and compares each async setting with the synchronous one on the same episodes with
``trainers.rl.compare.compare_runs``: the paired bootstrap over episodes and the t interval over the training seeds,
for the whole validation set and per env. Run folders are kept in ``--work``; a finished run is not trained again and a
stopped one resumes from its last checkpoint. Results: benchmarks/async_rollout.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from trainers.rl.compare import compare_runs

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "leaderboards" / "agentgym-v2" / "models" / "default-model-sft"
CLI = Path(sys.executable).parent / "agentgym-bench"
SETTINGS = {
    "sync 1 thread": ("num_threads=1",),
    "sync 1 thread, recomputed": ("num_threads=1", "use_sampler_logprobs=false"),
    "sync 2 threads": ("num_threads=2",),
    "async S=1": ("num_threads=1", "async_rollout.max_staleness=1", "use_sampler_logprobs=false"),
    "async S=2": ("num_threads=1", "async_rollout.max_staleness=2", "use_sampler_logprobs=false"),
}


def train(folder: Path, setting: str, iterations: int, seed: int, eval_steps: int) -> list[dict]:
    """Train ``setting`` into ``folder`` (resuming a stopped run); return its ``metrics.jsonl`` records."""
    if not (folder / "summary.json").exists():
        command = [str(CLI), "train", "baseline-starpo", f"pretrain={CHECKPOINT}", f"output_dir={folder}",
                   f"seed={seed}", f"max_steps={iterations}", f"eval_steps={eval_steps}", f"save_steps={eval_steps}",
                   "resume_from_checkpoint=auto", *SETTINGS[setting]]
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def iteration_stats(records: list[dict]) -> dict[str, float]:
    """Median seconds an iteration and trained reply tokens a second over iterations 2 .. n-1."""
    steps = [r for r in records if r.get("step", 0) >= 2 and "time/eval" not in r and "time/step" in r]
    seconds = statistics.median(r["time/step"] for r in steps)
    tokens = statistics.median(r["rollout/samples"] * r["rollout/response_length"] / r["time/step"] for r in steps)
    lags = [r["async/version_lag"] for r in steps if "async/version_lag" in r]
    return {"seconds": seconds, "tokens_per_s": tokens, "lag": statistics.mean(lags) if lags else 0.0}


def busy() -> None:
    while True:
        pass


def speed(args: argparse.Namespace) -> None:
    work = Path(args.work) / f"speed-load{args.load}"
    load = [multiprocessing.get_context("fork").Process(target=busy, daemon=True) for _ in range(args.load)]
    for p in load:
        p.start()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
    try:
        for round_ in range(args.rounds):
            for name in SETTINGS:
                folder = work / f"{name.replace(' ', '-').replace('=', '')}-round{round_}"
                records = train(folder, name, args.iterations, 0, 10 ** 6)
                results[name].append(iteration_stats(records))
                print(f"round {round_} {name}: {results[name][-1]['seconds']:.2f} s/iteration", flush=True)
    finally:
        for p in load:
            p.terminate()
    base = statistics.median(r["seconds"] for r in results["sync 1 thread"])
    print(f"\n{args.iterations} iterations a run, {args.rounds} rounds, {args.load} busy processes beside; "
          "median over rounds of each run's median iteration")
    print("| setting | s/iteration | iterations/hour | trained tokens/s | vs sync 1 thread | mean lag |")
    print("|---|---|---|---|---|---|")
    for name, runs in results.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        tokens = statistics.median(r["tokens_per_s"] for r in runs)
        lag = statistics.mean(r["lag"] for r in runs)
        print(f"| {name} | {seconds:.2f} | {3600 / seconds:.0f} | {tokens:.0f} | {base / seconds:.2f}x | {lag:.2f} |")


def env_slices(first: dict, before: list[int]) -> dict[str, slice]:
    """Each validation env's episodes in ``val_episodes`` (equal blocks in the recipe's tags' order), checked against
    the per-env validation successes the run logged before training (``first``, its step-0 record)."""
    tags = ["AgentSokoban-v0", "AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0", "AgentBandit-v0"]
    size = len(before) // len(tags)
    slices = {tag: slice(i * size, (i + 1) * size) for i, tag in enumerate(tags)}
    for tag, part in slices.items():
        if abs(np.mean(before[part]) - first[f"val/{tag}/success"]) > 1e-9:
            raise SystemExit(f"validation episodes are not in blocks of {size} in the order {tags}")
    return slices


def learning(args: argparse.Namespace) -> None:
    work = Path(args.work) / f"learning-{args.iterations}"
    names = ["sync 2 threads", "async S=1", "async S=2"]
    runs: dict[str, list[Path]] = {name: [] for name in names}
    for seed in args.seeds:
        for name in names:
            folder = work / f"{name.replace(' ', '-').replace('=', '')}-seed{seed}"
            started = time.monotonic()
            records = train(folder, name, args.iterations, seed, max(1, args.iterations // 2))
            stats = iteration_stats(records)
            print(f"seed {seed} {name}: val {records[-1].get('val/success', float('nan')):.3f}, "
                  f"{stats['seconds']:.2f} s/iteration, mean lag {stats['lag']:.2f} "
                  f"({(time.monotonic() - started) / 60:.1f} min)", flush=True)
            runs[name].append(folder)
    after = {name: [json.loads((f / "summary.json").read_text())["val_episodes"]["after"] for f in folders]
             for name, folders in runs.items()}
    before = json.loads((runs[names[0]][0] / "summary.json").read_text())["val_episodes"]["before"]
    first = json.loads((runs[names[0]][0] / "metrics.jsonl").read_text().splitlines()[0])
    slices = {"all": slice(None), **env_slices(first, before)}
    print(f"\n{args.iterations} iterations x 128 episodes, training seeds {args.seeds}; validation after training, "
          "paired on the same episodes against sync")
    print("| env | start | sync | async S=1 | S=1 - sync (episodes) | (seeds) | async S=2 | S=2 - sync (episodes) | "
          "(seeds) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env, part in slices.items():
        base = [run[part] for run in after["sync 2 threads"]]
        cells = [env, f"{np.mean(before[part]):.3f}", f"{np.mean(base):.3f}"]
        for name in names[1:]:
            result = compare_runs(base, [run[part] for run in after[name]])
            e, s = result["episodes"], result.get("seeds")
            cells += [f"{np.mean(result['other']):.3f}",
                      f"{result['difference']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]",
                      f"[{s['low']:+.3f}, {s['high']:+.3f}]" if s else "-"]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("speed", "learning"))
    parser.add_argument("--iterations", type=int, help="iterations a run (speed: 12, learning: 100)")
    parser.add_argument("--rounds", type=int, default=2, help="speed: rounds over the settings")
    parser.add_argument("--load", type=int, default=0, help="speed: busy-looping processes beside the timed runs")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="learning: training seeds")
    parser.add_argument("--work", default="runs/async-benchmark", help="folder for the run folders (kept)")
    args = parser.parse_args()
    args.iterations = args.iterations or (12 if args.phase == "speed" else 100)
    (speed if args.phase == "speed" else learning)(args)


if __name__ == "__main__":
    main()
