"""Batched group rollout vs generating for one env at a time: turns/s, generated tokens/s, peak memory.

Both sides run the same rollout engine (``EnvGroups.rollout``) over the same 128 envs (16 groups x 8, same seeds)
with the same model and greedy decoding; the only difference is the generation call: one batched
``HFPolicy.generate`` per turn for all live envs, or one call per env (:class:`OneAtATime`). Greedy decoding makes
both sides produce identical trajectories (checked), so they do the same work.

Each (env, side, round) runs in a fresh subprocess so that its peak resident memory (``ru_maxrss``) is its own; the
timed part is the rollout only (model loading and a one-episode warm-up are excluded). Rounds alternate the sides.

    .venv/bin/python benchmarks/rollout_throughput.py [--model DIR] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENVS = ("AgentFrozenLake-v0", "AgentSokoban-v0")


class OneAtATime:
    """Wraps a policy: one ``generate`` call per conversation."""

    def __init__(self, policy):
        self.policy = policy

    def generate(self, conversations, envs=None):
        return [self.policy.generate([c])[0] for c in conversations]


def worker(args: argparse.Namespace) -> None:
    """Run one timed rollout and print a JSON line."""
    import hashlib

    import torch

    import agentgym_bench  # noqa: F401
    from agentgym_bench.rollout import EnvGroups
    from agentgym_bench.rollout.hf import HFPolicy

    torch.set_num_threads(args.threads)
    policy = HFPolicy.from_pretrained(args.model, temperature=0, max_new_tokens=args.max_new_tokens)
    if args.side == "single":
        policy = OneAtATime(policy)
    kwargs = {"env_kwargs": {"prompt": "compact"}, "seed": args.seed}
    EnvGroups([args.env], [1], 1, **kwargs).rollout(policy, history=args.history)  # warm-up
    groups = EnvGroups([args.env], [args.groups], args.group_size, **kwargs)
    start, cpu = time.perf_counter(), time.process_time()
    trajectories = groups.rollout(policy, history=args.history)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    turns = sum(len(t.turns) for t in trajectories)
    tokens = sum(len(u.token_ids) for t in trajectories for u in t.turns)
    # replies and outcomes (log-probs differ in the last float bits between batch shapes)
    played = [[(u.reply, u.token_ids, u.reward, u.info["state_key"]) for u in t.turns] for t in trajectories]
    digest = hashlib.sha256(json.dumps(played).encode()).hexdigest()
    print(json.dumps({"env": args.env, "side": args.side, "wall": wall, "cpu": cpu, "turns": turns,
                      "tokens": tokens, "success": sum(t.success for t in trajectories) / len(trajectories),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "digest": digest}))


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
    parser.add_argument("--worker", choices=["batched", "single"], default=None, help=argparse.SUPPRESS)
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
            from trainers.default_model import build_default_model

            args.model = str(build_default_model(Path(tempfile.mkdtemp()) / "default"))
    print(f"model {args.model}; {args.groups} groups x {args.group_size} envs; {args.rounds} rounds; "
          f"{args.threads} thread(s)")
    results: dict[tuple[str, str], list[dict]] = {}
    for env in args.envs:
        for _ in range(args.rounds):
            for side in ("batched", "single"):
                command = [sys.executable, __file__, "--worker", side, "--env", env, "--model", args.model,
                           "--groups", str(args.groups), "--group-size", str(args.group_size),
                           "--max-new-tokens", str(args.max_new_tokens), "--history", str(args.history),
                           "--threads", str(args.threads), "--seed", str(args.seed)]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                row = json.loads(out.strip().splitlines()[-1])
                results.setdefault((env, side), []).append(row)
                print(f"  {env} {side}: {row['turns'] / row['wall']:.1f} turns/s, "
                      f"{row['tokens'] / row['wall']:.1f} tokens/s, {row['peak_rss_mb']:.0f} MB")
    print("\n| env | side | turns | tokens | turns/s (median) | tokens/s (median) | CPU s | peak RSS MB "
          "| speed-up (wall) | speed-up (CPU) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for env in args.envs:
        batched, single = results[(env, "batched")], results[(env, "single")]
        same = {r["digest"] for r in batched + single} == {batched[0]["digest"]}
        ratios = [s["wall"] / b["wall"] for b, s in zip(batched, single, strict=True)]
        cpu_ratios = [s["cpu"] / b["cpu"] for b, s in zip(batched, single, strict=True)]
        for side, rows in (("batched", batched), ("one at a time", single)):
            wall = statistics.median(r["wall"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            speed = "1x | 1x"
            if rows is batched:
                speed = (f"**{statistics.median(ratios):.1f}x** ({min(ratios):.1f}-{max(ratios):.1f}) | "
                         f"{statistics.median(cpu_ratios):.1f}x ({min(cpu_ratios):.1f}-{max(cpu_ratios):.1f})")
            peak = max(r["peak_rss_mb"] for r in rows)
            print(f"| {env} | {side} | {rows[0]['turns']} | {rows[0]['tokens']} | {rows[0]['turns'] / wall:.1f} | "
                  f"{rows[0]['tokens'] / wall:.1f} | {cpu:.2f} | {peak:.0f} | {speed} |")
        print(f"success {batched[0]['success']:.3f}; identical trajectories on both sides: {same}")


if __name__ == "__main__":
    main()
