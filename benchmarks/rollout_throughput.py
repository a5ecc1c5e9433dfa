"""Batched group rollout vs generating for one env at a time: turns/s, generated tokens/s, peak memory.

Both sides run the same rollout engine (``EnvGroups.rollout``) over the same 128 envs (16 groups x 8, same seeds)
with the same model and greedy decoding; the only difference is the generation call: one batched
``HFPolicy.generate`` per turn for all live envs, or one call per env (:class:`OneAtATime`). Greedy decoding makes
both sides produce identical trajectories (checked), so they do the same work.

The batched side prefills each distinct prompt of a call once (``HFPolicy(share_prefill=True)``, the default).
Greedy decoding flatters that: every member of a group plays the same episode, so a group's 8 prompts are one.
``--sample`` samples at temperature 1 with keyed per-row sampling (``EnvGroups.rollout(keyed=True)``: each
episode's draws depend on that episode alone), so the sides still play identical trajectories while a group's
members diverge. ``--no-share-prefill`` adds a third side, batched without sharing (``share_prefill=False``).
``--plain-cache`` adds a side batched with the plain ``DynamicCache`` that grows by ``torch.cat`` each step
(``HFPolicy.reserve_cache = False``, the path before the reserved cache of issue 60 D1); ``--no-single`` leaves out
the one-at-a-time side (the slowest), for comparing batched sides only.

Each (env, side, round) runs in a fresh subprocess so that its peak resident memory (``ru_maxrss``) is its own; the
timed part is the rollout only (model loading and a one-episode warm-up are excluded). Rounds alternate the sides.

    .venv/bin/python benchmarks/rollout_throughput.py [--model DIR] [--rounds 3] [--threads 1] [--sample]
        [--no-share-prefill] [--plain-cache] [--no-single] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENVS = ("AgentFrozenLake-v0", "AgentSokoban-v0")
SIDES = {"batched": "batched", "unshared": "batched, no sharing", "plain": "batched, plain cache",
         "single": "one at a time"}


class OneAtATime:
    """Wraps a policy: one ``generate`` call per conversation."""

    def __init__(self, policy):
        self.policy = policy

    def generate(self, conversations, envs=None, keys=None):
        return [self.policy.generate([c], keys=None if keys is None else [keys[i]])[0]
                for i, c in enumerate(conversations)]


def worker(args: argparse.Namespace) -> None:
    """Run one timed rollout and print a JSON line."""
    import hashlib

    import torch

    import agentgym_bench  # noqa: F401
    from agentgym_bench.rollout import EnvGroups
    from agentgym_bench.rollout.hf import HFPolicy

    torch.set_num_threads(args.threads)
    policy = HFPolicy.from_pretrained(args.model, temperature=1 if args.sample else 0,
                                      max_new_tokens=args.max_new_tokens, share_prefill=args.side != "unshared")
    policy.reserve_cache = args.side != "plain"
    prefill_rows = []  # the batch size of each prompt's forward (decode steps take one position)
    policy.model.register_forward_pre_hook(
        lambda _m, _a, kw: prefill_rows.append(kw["input_ids"].shape[0]) if kw["input_ids"].shape[1] > 1 else None,
        with_kwargs=True)
    if args.side == "single":
        policy = OneAtATime(policy)
    kwargs = {"env_kwargs": {"prompt": "compact"}, "seed": args.seed}
    EnvGroups([args.env], [1], 1, **kwargs).rollout(policy, history=args.history, keyed=args.sample)  # warm-up
    groups = EnvGroups([args.env], [args.groups], args.group_size, **kwargs)
    prefill_rows.clear()
    if args.profile:  # the profiler's first start takes about a second: not the rollout's
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            pass
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if args.profile else None
    start, cpu = time.perf_counter(), time.process_time()
    with profiler or contextlib.nullcontext():
        trajectories = groups.rollout(policy, history=args.history, keyed=args.sample)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if profiler is not None:
        print_profile(profiler, wall)
    turns = sum(len(t.turns) for t in trajectories)
    tokens = sum(len(u.token_ids) for t in trajectories for u in t.turns)
    # replies and outcomes (log-probs differ in the last float bits between batch shapes)
    played = [[(u.reply, u.token_ids, u.reward, u.info["state_key"]) for u in t.turns] for t in trajectories]
    digest = hashlib.sha256(json.dumps(played).encode()).hexdigest()
    print(json.dumps({"env": args.env, "side": args.side, "wall": wall, "cpu": cpu, "turns": turns,
                      "tokens": tokens, "prefill_rows": sum(prefill_rows),
                      "success": sum(t.success for t in trajectories) / len(trajectories),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "digest": digest}))


def print_profile(profiler, wall: float) -> None:
    """The torch ops' self CPU time as shares of the profiled rollout's wall time (to stderr): what a forward pass
    spends where, and, as the remainder, Python (the engine, transformers' module code, sampling) and the envs."""
    rows = sorted(profiler.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    ops = sum(e.self_cpu_time_total for e in rows) / 1e6
    print(f"profile: {wall:.2f} s wall, torch ops {ops:.2f} s ({ops / wall:.0%}); the rest Python and envs",
          file=sys.stderr)
    for e in rows[:14]:
        print(f"  {e.key:40s} {e.self_cpu_time_total / 1e6:6.3f} s  {e.self_cpu_time_total / 1e6 / wall:5.1%}  "
              f"{e.count} calls", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the warm-start folder if it exists, "
                        "else a freshly built default model)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per env (default: 3)")
    parser.add_argument("--groups", type=int, default=16, help="env groups (default: 16)")
    parser.add_argument("--group-size", type=int, default=8, help="envs per group (default: 8)")
    parser.add_argument("--max-new-tokens", type=int, default=16, help="reply budget (default: 16)")
    parser.add_argument("--history", type=int, default=0, help="history window (default: 0)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per side (default: 1)")
    parser.add_argument("--seed", type=int, default=10_000, help="first group seed (default: 10000)")
    parser.add_argument("--envs", nargs="+", default=list(ENVS), help="env ids (default: %(default)s)")
    parser.add_argument("--sample", action="store_true", help="temperature 1 with keyed per-row sampling "
                        "(default: greedy, which makes a group's members play the same episode)")
    parser.add_argument("--no-share-prefill", action="store_true", help="add a third side: batched without "
                        "prefill sharing (HFPolicy(share_prefill=False))")
    parser.add_argument("--plain-cache", action="store_true", help="add a side: batched with the plain "
                        "DynamicCache grown by torch.cat each step (HFPolicy.reserve_cache = False)")
    parser.add_argument("--no-single", action="store_true", help="leave out the one-at-a-time side")
    parser.add_argument("--profile", action="store_true", help="profile one batched rollout per env in-process "
                        "(torch.profiler: each op's self CPU time as a share of the wall time) instead of timing")
    parser.add_argument("--worker", choices=list(SIDES), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--env", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.side = args.worker
        worker(args)
        return
    if args.model is None:
        from agentgym_bench.paths import model_dir

        if model_dir("warmstart").exists():
            args.model = str(model_dir("warmstart"))
        else:
            from trainers.sft.default_model import build_default_model

            args.model = str(build_default_model(Path(tempfile.mkdtemp()) / "default"))
    if args.profile:
        for env in args.envs:
            print(f"{env}, batched{', sampled' if args.sample else ', greedy'}:", file=sys.stderr)
            args.side, args.env = "batched", env
            worker(args)
        return
    sides = ["batched"] + ["unshared"] * args.no_share_prefill + ["plain"] * args.plain_cache
    sides += [] if args.no_single else ["single"]
    print(f"model {args.model}; {args.groups} groups x {args.group_size} envs; {args.rounds} rounds; "
          f"{args.threads} thread(s); {'sampled (keyed, temperature 1)' if args.sample else 'greedy'}")
    results: dict[tuple[str, str], list[dict]] = {}
    for env in args.envs:
        for _ in range(args.rounds):
            for side in sides:
                command = [sys.executable, __file__, "--worker", side, "--env", env, "--model", args.model,
                           "--groups", str(args.groups), "--group-size", str(args.group_size),
                           "--max-new-tokens", str(args.max_new_tokens), "--history", str(args.history),
                           "--threads", str(args.threads), "--seed", str(args.seed)] + ["--sample"] * args.sample
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                row = json.loads(out.strip().splitlines()[-1])
                results.setdefault((env, side), []).append(row)
                print(f"  {env} {SIDES[side]}: {row['turns'] / row['wall']:.1f} turns/s, "
                      f"{row['tokens'] / row['wall']:.1f} tokens/s, {row['peak_rss_mb']:.0f} MB")

    def speed_up(sides: tuple[list[dict], list[dict]], key: str) -> str:
        """``slow / fast`` of ``key`` round by round: median (range)."""
        ratios = [s[key] / f[key] for f, s in zip(*sides, strict=True)]
        return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"

    print("\n| env | side | turns | tokens | prefill rows | turns/s (median) | tokens/s (median) | CPU s "
          "| peak RSS MB | vs one at a time (wall) | vs one at a time (CPU) | sharing vs not (wall) "
          "| reserved vs plain cache (wall) | (CPU) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for env in args.envs:
        single = results.get((env, "single"))
        same = len({r["digest"] for side in sides for r in results[(env, side)]}) == 1
        for side in sides:
            rows = results[(env, side)]
            wall = statistics.median(r["wall"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            speed = "1x | 1x"
            if single is None:
                speed = " | "
            elif side != "single":
                speed = f"**{speed_up((rows, single), 'wall')}** | {speed_up((rows, single), 'cpu')}"
            sharing = ""
            if side == "batched" and "unshared" in sides:
                sharing = f"**{speed_up((rows, results[(env, 'unshared')]), 'wall')}**"
            cache = " | "
            if side == "batched" and "plain" in sides:
                plain = results[(env, "plain")]
                cache = f"**{speed_up((rows, plain), 'wall')}** | {speed_up((rows, plain), 'cpu')}"
            peak = max(r["peak_rss_mb"] for r in rows)
            print(f"| {env} | {SIDES[side]} | {rows[0]['turns']} | {rows[0]['tokens']} | {rows[0]['prefill_rows']} | "
                  f"{rows[0]['turns'] / wall:.1f} | {rows[0]['tokens'] / wall:.1f} | {cpu:.2f} | {peak:.0f} | "
                  f"{speed} | {sharing} | {cache} |")
        print(f"success {results[(env, sides[0])][0]['success']:.3f}; identical trajectories on every side: {same}")


if __name__ == "__main__":
    main()
