"""Sokoban: how a model's episodes were lost, read from ``agentgym-bench eval`` results files.

Each episode of the file's Sokoban entries is re-played through a fresh env with its recorded replies. After every
turn the room is solved again (``envs/sokoban/solver.solve``) within the actions the episode has left: a lost episode
is *too slow* if its room first stopped being solvable in the actions left while still solvable at all (a detour),
*dead* if no solution remained (a box pushed where it cannot come back). Printed per entry: success by the shortest
solution's length at the start, how lost episodes were lost and after which turn — the table of
docs/lab/2026-11-26-sokoban-8x8-alone.md ("Sokoban 8x8/2 alone") — and how many losing turns began in a room the
oracle's own solution passes through (a room of the kind the demonstrations show) or in one off it (an earlier move
left that path, by another shortest solution or a detour the budget could still absorb).

    .venv/bin/python benchmarks/sokoban_failures.py RESULTS.json.gz [--entry sokoban-8x8-2box]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import gymnasium as gym

import agentgym_bench  # noqa: F401  (registers the envs)
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.envs.sokoban.rules import Room, move
from agentgym_bench.envs.sokoban.solver import solve


def oracle_path(room: Room, solution: list[str]) -> set[Room]:
    """The rooms the oracle passes through from ``room``: its shortest ``solution`` played move by move."""
    rooms = {room}
    for action in solution:
        room = move(room, action)
        rooms.add(room)
    return rooms


def lost_how(env: gym.Env, episode) -> tuple[int, str | None, int | None, bool | None]:
    """(shortest solution's length at the start, how it was lost, the 1-based turn after which the room first could
    not be solved in the actions left, whether that turn began on the oracle's path) for one recorded episode,
    re-played in ``env``. How: ``None`` (won), ``"too slow"``, ``"dead"``, or ``"out of turns"`` (still solvable in
    the actions left when the turns ran out)."""
    env.reset(seed=episode.seed)
    game = env.unwrapped.game
    solution = solve(game.room)
    shortest = len(solution)
    if episode.success:
        return shortest, None, None, None
    path = oracle_path(game.room, solution)
    for turn_number, turn in enumerate(episode.turns, 1):
        on_path = game.room in path
        env.step(turn.reply)
        if solve(game.room, max_depth=max(env.unwrapped.actions_left, 0)) is None:
            return shortest, "dead" if solve(game.room) is None else "too slow", turn_number, on_path
    return shortest, "out of turns", None, None


def report(path: str, entry_name: str | None) -> None:
    entries = [e for e in read_results(path).entries
               if "Sokoban" in e.env_id and (entry_name is None or e.name == entry_name)]
    if not entries:
        raise SystemExit(f"{path}: no Sokoban entry" + (f" named {entry_name!r}" if entry_name else ""))
    for entry in entries:
        env = gym.make(entry.env_id, **{**entry.env_kwargs, "prompt": "compact"})
        by_length: dict[int, list[bool]] = defaultdict(list)
        kinds: Counter[str] = Counter()
        turns: Counter[int] = Counter()
        on_path: Counter[bool] = Counter()
        for episode in entry.episodes:
            shortest, kind, turn, began_on_path = lost_how(env, episode)
            if began_on_path is not None:
                on_path[began_on_path] += 1
            by_length[shortest].append(episode.success)
            if kind is not None:
                kinds[kind] += 1
            if turn is not None:
                turns[turn] += 1
        env.close()
        lost = sum(kinds.values())
        print(f"{path}: {entry.name} ({entry.env_id}), {len(entry.episodes)} episodes, {lost} lost")
        print("| shortest solution (moves) | " + " | ".join(str(n) for n in sorted(by_length)) + " |")
        print("|---|" + "---:|" * len(by_length))
        print("| rooms | " + " | ".join(str(len(by_length[n])) for n in sorted(by_length)) + " |")
        print("| success | " + " | ".join(f"{sum(v) / len(v):.2f}" for _, v in sorted(by_length.items())) + " |")
        print("lost: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
        print("first unsolvable in the actions left after turn: "
              + ", ".join(f"{turn}: {n}" for turn, n in sorted(turns.items())))
        print(f"that turn began on the oracle's path: {on_path[True]}, off it: {on_path[False]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="results files written by `agentgym-bench eval`")
    parser.add_argument("--entry", default=None, help="only the entry of this name (default: every Sokoban entry)")
    args = parser.parse_args()
    for path in args.results:
        report(path, args.entry)


if __name__ == "__main__":
    main()
