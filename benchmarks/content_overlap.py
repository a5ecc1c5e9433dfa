"""Share of each suite entry's test episodes whose content also occurs among training and validation episodes.

Run:  .venv/bin/python benchmarks/content_overlap.py [--suite agentgym-v2] [--train 200000] [--validation 10000]

Content is the first observation of the core game (:mod:`agentgym_bench.benchmark.overlap`): a Sokoban room with its
start positions, a FrozenLake map, WebShop's goal, a Bargain deal. The goal is 0 for every entry of a held-out suite;
``--suite agentgym-v1`` shows the overlap that suite was retired for. Results: benchmarks/content_overlap.md.
"""

from __future__ import annotations

import argparse
import sys
import time

from agentgym_bench.benchmark.overlap import overlap
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.errors import UserError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", action="append", help="suite(s) to measure (default: agentgym-v2, agentgym-ma-v2)")
    parser.add_argument("--train", type=int, default=200_000, help="training episodes (default: %(default)s)")
    parser.add_argument("--validation", type=int, default=10_000, help="validation episodes (default: %(default)s)")
    args = parser.parse_args()
    print(f"| suite | entry | test episodes | distinct | in {args.train:,} training | in {args.validation:,} "
          "validation | s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.suite or ["agentgym-v2", "agentgym-ma-v2"]:
        try:
            suite = load_suite(name)
        except UserError as err:  # a suite file of one's own that does not parse: one line, as the commands say it
            sys.exit(f"content_overlap: {err}")
        for entry in suite.entries:
            start = time.perf_counter()
            found = overlap(entry, args.train, args.validation)
            took = time.perf_counter() - start
            if found is None:
                print(f"| {name} | {entry.name} | {entry.episodes} | - | no generated content | - | {took:.0f} |")
                continue
            print(f"| {name} | {entry.name} | {found.test} | {found.distinct_test} | {found.in_train} "
                  f"({found.share_in_train:.1%}) | {found.in_validation} ({found.share_in_validation:.1%}) | "
                  f"{took:.0f} |", flush=True)


if __name__ == "__main__":
    main()
