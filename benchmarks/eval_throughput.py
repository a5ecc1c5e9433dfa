"""Evaluation throughput of a model over a benchmark suite: all entries in one batch vs one episode at a time.

Run:  OMP_NUM_THREADS=1 .venv/bin/python benchmarks/eval_throughput.py [--model PATH] [--episodes 100] [--rounds 3]

Both ways use keyed sampling, so each episode's randomness is its own; the table gives episodes/s and turns/s of
each, their ratio, and CPU seconds, on one torch thread. Without ``--model`` the untrained default model is built in
a temporary folder (its replies are mostly invalid, so episodes are long: a worst case for turns).

Keyed sampling does not make the replies batch-invariant on a CPU: a row's logits differ in their last bits with the
rows padded and batched around it (other matrix shapes), and now and then that flips a sampled token. The script
counts them rather than assert: a *flip* is the first turn of an episode whose reply differs batched and alone (the
turns after it read other observations, so they are not counted again); it prints the flips, the share of replies
(flips / turns played batched) and the share of episodes they touched. Verification re-generates in the
evaluation's own batches (``agentgym_bench.leaderboard.regenerate.evaluation_batches``), where this does not arise.
Results: benchmarks/eval_throughput.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch

from agentgym_bench.benchmark.episodes import play_suite_episodes
from agentgym_bench.benchmark.suites import load_suite, parse_suite
from agentgym_bench.rollout.specs import Sampling, policy_from_spec


def cut(suite_name: str, episodes: int):
    full = load_suite(suite_name)
    data = {"name": full.name, "version": full.version, "split": full.split, "seed_start": full.seed_start,
            "entries": [{"name": e.name, "env_id": e.env_id, "env_kwargs": e.env_kwargs, "prompts": list(e.prompts),
                         "episodes": min(episodes, e.episodes), "oracle_success": e.oracle_success}
                        for e in full.entries]}
    return parse_suite(json.loads(json.dumps(data)))


def one_at_a_time(policy, suite):
    out = {}
    for entry in suite.entries:
        trajectories = []
        for seed in entry.seeds:
            alone = parse_suite({"name": suite.name, "version": suite.version, "split": suite.split,
                                 "seed_start": seed, "entries": [{
                                     "name": entry.name, "env_id": entry.env_id, "env_kwargs": entry.env_kwargs,
                                     "prompts": list(entry.prompts), "episodes": 1,
                                     "oracle_success": entry.oracle_success}]})
            trajectories += play_suite_episodes(policy, alone, prompt="compact", history=0)[entry.name]
        out[entry.name] = trajectories
    return out


def flips(batched, single) -> list[tuple[str, int, int]]:
    """(entry, seed, turn) of each episode's first reply that differs batched and alone (a turn only one side played
    counts as different)."""
    out = []
    for name, trajectories in batched.items():
        for b, s in zip(trajectories, single[name], strict=True):
            assert b.seed == s.seed
            one, other = [t.reply for t in b.turns], [t.reply for t in s.turns]
            for t in range(max(len(one), len(other))):
                if t >= len(one) or t >= len(other) or one[t] != other[t]:
                    out.append((name, b.seed, t))
                    break
    return out


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--suite", default="agentgym-v2-validation")
    parser.add_argument("--episodes", type=int, default=100, help="episodes per entry (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = args.model
    if model is None:
        from trainers.sft.default_model import build_default_model

        model = str(build_default_model(tempfile.mkdtemp() + "/default", seed=0))
    suite = cut(args.suite, args.episodes)
    sampling = Sampling(temperature=1.0, max_new_tokens=16, seed=0)
    rows = {"batched": [], "one at a time": []}
    flipped: list[list[tuple[str, int, int]]] = []
    played: list[int] = []
    for _ in range(args.rounds):
        policy, _ = policy_from_spec(f"hf:{model}", sampling)
        batched, w1, c1 = timed(lambda: play_suite_episodes(policy, suite, prompt="compact", history=0))  # noqa: B023
        single, w2, c2 = timed(lambda: one_at_a_time(policy, suite))  # noqa: B023
        turns = sum(len(tr.turns) for v in batched.values() for tr in v)
        turns_single = sum(len(tr.turns) for v in single.values() for tr in v)
        rows["batched"].append((w1, c1, turns))
        rows["one at a time"].append((w2, c2, turns_single))
        flipped.append(flips(batched, single))
        played.append(turns)
    episodes = suite.episodes
    print(f"model {model}, suite {suite.name} cut to {args.episodes} episodes per entry ({episodes} episodes), "
          f"{args.rounds} rounds, best round shown\n")
    print("| mode | episodes/s | turns/s | wall s | CPU s |")
    print("|---|---|---|---|---|")
    best = {}
    for mode, runs in rows.items():
        wall, cpu, turns = min(runs)
        best[mode] = wall
        print(f"| {mode} | {episodes / wall:.1f} | {turns / wall:.1f} | {wall:.1f} | {cpu:.1f} |")
    print(f"\nbatched / one at a time: {best['one at a time'] / best['batched']:.1f}x (wall)")
    first = flipped[0]
    same = all(f == first for f in flipped)
    print(f"\nreplies that differ batched vs alone (flips; first round): {len(first)} of {played[0]} replies "
          f"({len(first) / played[0]:.2%}), {len(first)} of {episodes} episodes ({len(first) / episodes:.2%}); "
          f"{'the same in every round' if same else 'rounds differ: ' + str([len(f) for f in flipped])}")
    for name, seed, turn in first:
        print(f"  flip: entry {name}, seed {seed}, turn {turn + 1}")


if __name__ == "__main__":
    main()
