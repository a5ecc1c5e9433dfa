"""Sokoban room generation: agentgym-bench's generator vs gym-sokoban 0.0.6's ``generate_room``, side by side.

For each room size it times one room per seed with both generators (ours in this process; gym-sokoban in a
subprocess running in its own venv, because it needs the old ``gym``), then solves every room with our BFS solver
so that speed is compared at equal or greater difficulty: optimal solution lengths, the fraction solvable within
RAGEN's 10 actions, and how often the player starts next to a box. gym-sokoban is timed the way its env's
``reset()`` uses it (retrying on "score == 0" / "not enough free spots"); the "+ RAGEN walk" rows apply RAGEN's
1-3 random player steps to the same rooms (difficulty only, not timed).

Usage, from the repository root::

    python3 -m venv benchmarks/.venv-gymsokoban
    benchmarks/.venv-gymsokoban/bin/pip install gym-sokoban==0.0.6
    .venv/bin/python benchmarks/sokoban_generation.py --rooms 500
    .venv/bin/python benchmarks/sokoban_generation.py --rooms 500 --search-depth 10

Results are recorded in ``benchmarks/sokoban_generation.md``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

CONFIGS = ((6, 6, 1), (8, 8, 2))
GYM_PYTHON = Path(__file__).parent / ".venv-gymsokoban" / "bin" / "python"


def gym_sokoban_worker(height: int, width: int, num_boxes: int, rooms: int) -> None:
    """Runs inside the gym-sokoban venv: one JSON line per room (ms, grid text, grid text after RAGEN's walk)."""
    import random
    import warnings

    import numpy as np

    warnings.simplefilter("ignore")
    from gym_sokoban.envs.room_utils import generate_room

    symbols = {0: "#", 1: "_", 2: "O"}

    def text(fixed: np.ndarray, state: np.ndarray) -> str:
        rows = []
        for r in range(height):
            row = ""
            for c in range(width):
                on_target = fixed[r, c] == 2
                if state[r, c] == 5:
                    row += "S" if on_target else "P"
                elif state[r, c] in (3, 4):
                    row += "√" if on_target else "X"
                else:
                    row += symbols[int(fixed[r, c])]
            rows.append(row)
        return "\n".join(rows)

    for seed in range(rooms):
        random.seed(seed)
        np.random.seed(seed)
        start = time.perf_counter()
        while True:  # as SokobanEnv.reset: retry on RuntimeError / RuntimeWarning
            try:
                fixed, state, box_mapping = generate_room(
                    dim=(height, width), num_steps=int(1.7 * (height + width)), num_boxes=num_boxes
                )
                break
            except (RuntimeError, RuntimeWarning):
                continue
        ms = (time.perf_counter() - start) * 1000
        plain = text(fixed, state)
        displacement = sum(abs(t[0] - b[0]) + abs(t[1] - b[1]) for t, b in box_mapping.items())
        _ragen_player_walk(state, fixed, 0.8 if displacement == 1 else 0.5, random)
        print(json.dumps({"ms": ms, "room": plain, "walked": text(fixed, state)}), flush=True)


def _ragen_player_walk(state, fixed, move_probability, rng, continue_probability=0.5, max_steps=3) -> None:
    """RAGEN's ``add_random_player_movement``: up to 3 steps onto free cells not visited before, in place."""
    if rng.random() > move_probability:
        return
    r, c = (int(v[0]) for v in (state == 5).nonzero())
    visited = {(r, c)}
    for _ in range(max_steps):
        moves = [(r + dr, c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))]
        moves = [m for m in moves if state[m] in (1, 2) and m not in visited]
        if not moves:
            break
        nr, nc = rng.choice(moves)
        state[r, c] = fixed[r, c]
        state[nr, nc] = 5
        r, c = nr, nc
        visited.add((r, c))
        if rng.random() > continue_probability:
            break


def ours(height: int, width: int, num_boxes: int, rooms: int, depth: int) -> list[dict]:
    """Time our generator, one fresh Generator per seed like ``reset(seed)``."""
    import numpy as np

    from agentgym_bench.envs.sokoban.generator import generate_room

    generate_room(np.random.default_rng(rooms), height, width, num_boxes, depth)  # warm-up, a seed not timed
    out = []
    for seed in range(rooms):
        rng = np.random.default_rng(seed)
        start = time.perf_counter()
        room = generate_room(rng, height, width, num_boxes, depth)
        out.append({"ms": (time.perf_counter() - start) * 1000, "room": room.to_text()})
    return out


def theirs(gym_python: Path, height: int, width: int, num_boxes: int, rooms: int) -> list[dict]:
    args = [str(gym_python), __file__, "--worker", str(height), str(width), str(num_boxes), str(rooms)]
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def difficulty(texts: list[str]) -> dict:
    """Optimal solution lengths (our BFS solver) and how often the player starts next to a box."""
    from agentgym_bench.envs.sokoban import Room, solve

    lengths, adjacent = [], 0
    for text in texts:
        room = Room.from_text(text)
        solution = solve(room)
        if solution is None:
            raise AssertionError(f"unsolvable room:\n{text}")
        lengths.append(len(solution))
        adjacent += any(room.player + d in room.boxes for d in (-room.width, room.width, -1, 1))
    lengths.sort()
    n = len(lengths)
    return {
        "median": lengths[n // 2],
        "mean": sum(lengths) / n,
        "p90": lengths[int(0.9 * n)],
        "max": lengths[-1],
        "le10": sum(k <= 10 for k in lengths) / n,
        "adjacent": adjacent / n,
        "histogram": dict(sorted(Counter(lengths).items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=300, help="rooms (seeds 0..rooms-1) per size and generator")
    parser.add_argument("--gym-python", type=Path, default=GYM_PYTHON, help="python of a venv with gym-sokoban 0.0.6")
    parser.add_argument("--search-depth", type=int, help="our generator's search_depth (default: SokobanGame's)")
    parser.add_argument("--worker", type=int, nargs=4, metavar=("H", "W", "BOXES", "ROOMS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        gym_sokoban_worker(*args.worker)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from agentgym_bench.envs.sokoban import SokobanGame

    depth = args.search_depth or inspect.signature(SokobanGame).parameters["search_depth"].default
    print(f"{args.rooms} rooms (seeds 0..{args.rooms - 1}) per size; our search_depth={depth}\n")

    print(
        "| room | generator | median ms | worst ms | speed-up (median / worst) "
        "| optimal moves median / mean / p90 / max | <= 10 moves | player next to a box |"
    )
    print("|---|---|---|---|---|---|---|---|")
    histograms = []
    for height, width, num_boxes in CONFIGS:
        mine = ours(height, width, num_boxes, args.rooms, depth)
        base = theirs(args.gym_python, height, width, num_boxes, args.rooms)
        rows = [
            ("agentgym-bench", [r["ms"] for r in mine], [r["room"] for r in mine]),
            ("gym-sokoban 0.0.6", [r["ms"] for r in base], [r["room"] for r in base]),
            ("gym-sokoban + RAGEN walk", None, [r["walked"] for r in base]),
        ]
        base_ms = sorted(r["ms"] for r in base)
        for name, ms, texts in rows:
            d = difficulty(texts)
            histograms.append((f"{height}x{width}, {num_boxes} box(es), {name}", d["histogram"]))
            if ms is None:
                timing = "— | — | —"
            else:
                ms = sorted(ms)
                median, worst = ms[len(ms) // 2], ms[-1]
                ratio = f"{base_ms[len(ms) // 2] / median:.1f}x / {base_ms[-1] / worst:.1f}x"
                timing = f"{median:.2f} | {worst:.1f} | {ratio}"
            print(
                f"| {height}x{width}, {num_boxes} | {name} | {timing} "
                f"| {d['median']} / {d['mean']:.1f} / {d['p90']} / {d['max']} "
                f"| {d['le10']:.0%} | {d['adjacent']:.0%} |"
            )
    print("\nOptimal solution lengths (moves: rooms):\n")
    for name, histogram in histograms:
        print(f"- {name}: " + ", ".join(f"{k}: {v}" for k, v in histogram.items()))


if __name__ == "__main__":
    main()
