"""How far Sokoban generation reaches within its bounds (generator.MAX_STATES, MAX_TOTAL_STATES).

Two tables, both on seeds fixed below:
1. per room shape, the share of random topologies whose backward search finds a start (a state with every box off
   its target and an optimal solution of at least MIN_MOVES moves) within MAX_STATES, and the time per topology;
2. whole ``generate_room`` calls: failures, median and worst wall time, and the process's peak memory.

Run from the repository root: ``.venv/bin/python benchmarks/sokoban_limits.py`` (results: sokoban_limits.md).
"""

from __future__ import annotations

import resource
import time

import numpy as np

from agentgym_bench.envs.sokoban import generator as g

TOPOLOGY_SHAPES = [(6, 6, 2), (6, 6, 3), (6, 6, 4), (8, 8, 3), (8, 8, 4), (10, 10, 5), (10, 10, 6), (20, 20, 5),
                   (20, 20, 6), (30, 30, 5), (30, 30, 6), (30, 30, 7), (30, 30, 8), (3, 7, 1), (3, 8, 1), (4, 5, 1),
                   (5, 5, 1), (5, 5, 2)]
CALL_SHAPES = [(6, 6, 1, 50), (8, 8, 2, 50), (20, 20, 5, 3), (30, 30, 5, 3), (32, 32, 5, 3), (30, 30, 8, 3)]


def topology_table(topologies: int = 8) -> None:
    print(f"| room, boxes | topologies with a start (of {topologies}) | s per topology |")
    print("|---|---|---|")
    for h, w, b in TOPOLOGY_SHAPES:
        rng = np.random.default_rng(1)
        found, started = 0, time.perf_counter()
        for _ in range(topologies):
            floor = g.random_topology(rng, h, w)
            if len(floor) < b + 2:
                continue
            targets = [int(c) for c in rng.choice(sorted(floor), size=b, replace=False)]
            layers = g.reverse_search(h, w, floor, targets, 300)
            found += sum(len(layer) for layer in layers[g.MIN_MOVES:]) > 0
        print(f"| {h}x{w}, {b} | {found} | {(time.perf_counter() - started) / topologies:.2f} |", flush=True)


def call_table() -> None:
    print("\n| room, boxes | seeds | failed (GenerationError) | median s | worst s | peak RSS so far, MB |")
    print("|---|---|---|---|---|---|")
    for h, w, b, seeds in CALL_SHAPES:
        times, failed = [], 0
        for seed in range(seeds):
            started = time.perf_counter()
            try:
                g.generate_room(np.random.default_rng(seed), h, w, b, 300)
            except g.GenerationError:
                failed += 1
            times.append(time.perf_counter() - started)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {h}x{w}, {b} | {seeds} | {failed} | {np.median(times):.3f} | {max(times):.2f} | {rss:.0f} |",
              flush=True)


if __name__ == "__main__":
    print(f"MAX_STATES={g.MAX_STATES:,}, MAX_TOTAL_STATES={g.MAX_TOTAL_STATES:,}, MAX_TRIES={g.MAX_TRIES}\n")
    topology_table()
    call_table()
