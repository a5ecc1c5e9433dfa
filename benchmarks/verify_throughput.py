"""Verification by replay: episodes per second on one core for full-suite submissions (random and oracle).

For each results file this times, in one process (one core; ``OMP_NUM_THREADS=1``):

- ``load``: reading the file with size limits, JSON Schema and NaN checks (``results.loads``);
- ``replay``: :func:`agentgym_bench.benchmark.kinds.replay_entry` over every entry (all checks: observation
  hashes, parsed and executed actions, rewards, turns, final observation, return, success);
- ``env only``: the baseline side by side, the same replies fed through the same envs with no checks and no hashing:
  the cost of the envs themselves, which replay cannot go below.

Usage (from the repository root)::

    agentgym-bench eval --policy random --out /tmp/random.json.gz
    agentgym-bench eval --policy oracle --out /tmp/oracle.json.gz
    OMP_NUM_THREADS=1 python benchmarks/verify_throughput.py /tmp/random.json.gz /tmp/oracle.json.gz
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace as dc_replace
from pathlib import Path

import gymnasium as gym

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.benchmark.kinds import replay_entry
from agentgym_bench.benchmark.results import EntryResults, loads


def env_only(entry: EntryResults) -> None:
    """Reset and step one env with the recorded replies, checking nothing (the baseline)."""
    env = gym.make(entry.env_id, **entry.env_kwargs).unwrapped
    for episode in entry.episodes:
        env.reset(seed=episode.seed)
        for turn in episode.turns:
            env.step(turn.reply)
    env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="full-suite results files")
    args = parser.parse_args()
    for path in args.files:
        raw = Path(path).read_bytes()
        start = time.perf_counter()
        results = loads(raw)
        load = time.perf_counter() - start
        episodes = sum(len(e.episodes) for e in results.entries)
        turns = sum(len(ep.turns) for e in results.entries for ep in e.episodes)
        print(f"\n{path}: {results.metadata['policy']['kind']}, {episodes} episodes, {turns} turns, "
              f"{len(raw):,} bytes; load + schema {load:.2f}s")
        print("| entry | episodes | replay eps/s | env only eps/s | replay / env only time |")
        print("|---|---:|---:|---:|---:|")
        total_replay = total_env = 0.0
        for entry in results.entries:
            env_only(dc_replace(entry, episodes=entry.episodes[:5]))  # warm-up: imports, data loading (WebShop)
            start = time.perf_counter()
            env_only(entry)
            t_env = time.perf_counter() - start
            start = time.perf_counter()
            replay_entry(entry)
            t_replay = time.perf_counter() - start
            total_replay, total_env = total_replay + t_replay, total_env + t_env
            n = len(entry.episodes)
            print(f"| {entry.name} | {n} | {n / t_replay:,.0f} | {n / t_env:,.0f} | {t_replay / t_env:.2f} |")
        print(f"| **all** | {episodes} | {episodes / total_replay:,.0f} | {episodes / total_env:,.0f} | "
              f"{total_replay / total_env:.2f} |")
        print(f"replay {total_replay:.2f}s; with load {episodes / (total_replay + load):,.0f} episodes/s")


if __name__ == "__main__":
    main()
