"""Pure FrozenLake rules: maps, moves, slips and the transition distribution. No spaces, no text, no hidden RNG.

A map is a tuple of row strings over ``F`` (frozen), ``H`` (hole), ``S`` (start, frozen) and ``G`` (goal); a position
is a ``(row, col)`` pair. Directions are numbered as in Gymnasium: 0 Left, 1 Down, 2 Right, 3 Up, so ``(d - 1) % 4``
and ``(d + 1) % 4`` are the two perpendicular directions and ``(d + 2) % 4`` the backward one (never taken).
"""

from __future__ import annotations

import numpy as np

from agentgym_bench.envs.draw_cache import Draws
from agentgym_bench.seeds import in_split

MAX_MAP_DRAWS = 100_000
"""Maps :func:`generate_map` draws before it gives up (only reached when a split holds no solvable map of a tiny size,
e.g. 2x2)."""

ACTIONS = ("Left", "Down", "Right", "Up")
_DELTAS = ((0, -1), (1, 0), (0, 1), (-1, 0))


def step_position(pos: tuple[int, int], direction: int, size: int) -> tuple[int, int]:
    """The cell one step from ``pos`` in ``direction``; a move into the border leaves the player where it is."""
    row = min(max(pos[0] + _DELTAS[direction][0], 0), size - 1)
    col = min(max(pos[1] + _DELTAS[direction][1], 0), size - 1)
    return row, col


def outcome_probs(direction: int, is_slippery: bool, success_rate: float) -> list[tuple[float, int]]:
    """``(probability, actual direction)`` pairs for an intended ``direction``: straight w.p. ``success_rate``,
    each perpendicular w.p. ``(1 - success_rate) / 2`` when slippery; straight w.p. 1 otherwise."""
    if not is_slippery:
        return [(1.0, direction)]
    side = (1.0 - success_rate) / 2.0
    return [(success_rate, direction), (side, (direction - 1) % 4), (side, (direction + 1) % 4)]


def sample_direction(direction: int, is_slippery: bool, success_rate: float, rng: np.random.Generator) -> int:
    """The direction actually taken; one uniform draw from ``rng`` per slippery move, none otherwise."""
    if not is_slippery:
        return direction
    u = rng.random()
    for prob, actual in outcome_probs(direction, is_slippery, success_rate):
        if u < prob:
            return actual
        u -= prob
    return (direction + 1) % 4  # only reached through float round-off when u is within 1e-16 of 1


def has_path(desc: tuple[str, ...], start: tuple[int, int], goal: tuple[int, int]) -> bool:
    """Whether ``goal`` is reachable from ``start`` through non-hole cells (4-neighbourhood)."""
    size = len(desc)
    seen, frontier = {start}, [start]
    while frontier:
        pos = frontier.pop()
        if pos == goal:
            return True
        for direction in range(4):
            nxt = step_position(pos, direction, size)
            if nxt not in seen and desc[nxt[0]][nxt[1]] != "H":
                seen.add(nxt)
                frontier.append(nxt)
    return False


def generate_map(size: int, p: float, rng: np.random.Generator, split: str | None = None,
                 remember: bool = False) -> tuple[tuple[str, ...], tuple[int, int]]:
    """A random solvable map and its start, RAGEN style: each tile frozen w.p. ``p`` (else a hole), start and goal at
    two distinct uniformly random cells (overwriting the tile there), resampled until a path joins them and the map
    belongs to ``split`` (:func:`map_text`, :func:`agentgym_bench.seeds.content_split`; ``None``: any map).
    ``remember=True`` (a seeded reset) lets a held-out split's call replay only its accepted draw the next time it
    starts from the same ``rng`` state (:mod:`agentgym_bench.envs.draw_cache`; same map, same final ``rng`` state).

    Returns:
        ``(desc, start)``: the rows (with one ``S`` and one ``G``) and the start position.

    Raises:
        RuntimeError: no such map in :data:`MAX_MAP_DRAWS` draws.
    """
    draws = Draws(rng, ("frozen_lake_rules.generate_map", size, p), split, remember)
    for _ in draws.attempts(MAX_MAP_DRAWS):
        frozen = rng.random((size, size)) < p
        start_idx, goal_idx = rng.choice(size * size, size=2, replace=False)
        start, goal = divmod(int(start_idx), size), divmod(int(goal_idx), size)
        rows = [["F" if f else "H" for f in row] for row in frozen]
        rows[start[0]][start[1]] = "S"
        rows[goal[0]][goal[1]] = "G"
        desc = tuple("".join(row) for row in rows)
        if has_path(desc, start, goal) and in_split(map_text(desc), split):
            draws.accept()
            return desc, start
    raise RuntimeError(f"no solvable {size}x{size} map of the {split} split with p={p} in {MAX_MAP_DRAWS} draws; "
                       "the content space of this size is too small to split (use a larger size)")


def map_text(desc: tuple[str, ...]) -> str:
    """The canonical text of a map with its start and goal, whose hash decides its content split:
    ``"frozenlake SFFF/FHFH/FFFH/HFFG"``."""
    return "frozenlake " + "/".join(desc)


def transition_matrices(desc: tuple[str, ...], is_slippery: bool, success_rate: float) -> np.ndarray:
    """``T[a, s, s']`` = probability that action ``a`` from cell ``s = row * size + col`` ends in ``s'``.

    Holes and the goal are absorbing (``T[a, s, s] = 1``), so after any action sequence the mass on the goal cell is
    the probability that the goal was reached during the sequence.
    """
    size = len(desc)
    n = size * size
    trans = np.zeros((4, n, n))
    for s in range(n):
        row, col = divmod(s, size)
        if desc[row][col] in "HG":
            trans[:, s, s] = 1.0
            continue
        for action in range(4):
            for prob, actual in outcome_probs(action, is_slippery, success_rate):
                nrow, ncol = step_position((row, col), actual, size)
                trans[action, s, nrow * size + ncol] += prob
    return trans
