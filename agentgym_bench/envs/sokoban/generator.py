"""Procedural Sokoban rooms by reverse play, solvable by construction, drawn from a numpy Generator.

1. Topology: a random walk stamps small floor masks into a walled grid (gym-sokoban's ``room_topology_generation``,
   ``int(1.7 * (height + width))`` steps, direction change probability 0.35).
2. Targets: ``num_boxes`` distinct floor cells.
3. Reverse play: a breadth-first search *backwards* from the solved room — boxes on their targets, the player on any
   other floor cell — where the player walks or pulls the box behind it. Every state reached after ``k`` backward
   moves can be solved in exactly ``k`` forward moves and no fewer, so the search yields every start position up to
   ``search_depth`` moves from a solution together with its exact optimal solution length.
4. Choice: a start is drawn among the states with no box on a target and an optimal solution of at least
   ``MIN_MOVES`` moves, with probability proportional to its optimal solution length (longer puzzles weigh more;
   with this weighting the 8x8 / 2-box length distribution matches gym-sokoban's, see
   ``benchmarks/sokoban_generation.md``). Drawing over all states, rather than keeping the state right after the
   last pull as gym-sokoban does, also places the player anywhere, not always next to a box, so RAGEN's extra
   random player steps are not needed.

If a topology admits no such state (e.g. every box is stuck on its target), a new topology is drawn from the same
generator, up to ``MAX_TRIES`` times.
"""

from __future__ import annotations

import numpy as np

from .rules import Room

MIN_MOVES = 3
"""Shortest optimal solution a generated room may have."""

MAX_TRIES = 1000
"""Topologies tried before :func:`generate_room` gives up."""

MAX_STATES = 200_000
"""Cap on backward-search states per topology (only reached by large rooms with many boxes)."""

_MASKS = (
    ((0, 0, 0), (1, 1, 1), (0, 0, 0)),
    ((0, 1, 0), (0, 1, 0), (0, 1, 0)),
    ((0, 0, 0), (1, 1, 0), (0, 1, 0)),
    ((0, 0, 0), (1, 1, 0), (1, 1, 0)),
    ((0, 0, 0), (0, 1, 1), (0, 1, 0)),
)
_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


def generate_room(rng: np.random.Generator, height: int, width: int, num_boxes: int, search_depth: int) -> Room:
    """Draw a solvable room.

    Args:
        rng: The only source of randomness.
        height: Rows, border included.
        width: Columns, border included.
        num_boxes: Boxes (and targets).
        search_depth: Longest optimal solution, in moves, a generated room may have.

    Returns:
        A room whose optimal solution takes between ``MIN_MOVES`` and ``search_depth`` moves.

    Raises:
        RuntimeError: if ``MAX_TRIES`` topologies in a row admit no such room.
    """
    for _ in range(MAX_TRIES):
        floor = random_topology(rng, height, width)
        if len(floor) < num_boxes + 2:
            continue
        cells = sorted(floor)
        targets = [int(c) for c in rng.choice(cells, size=num_boxes, replace=False)]
        layers = reverse_search(height, width, floor, targets, search_depth)
        total = sum(depth * len(layers[depth]) for depth in range(MIN_MOVES, len(layers)))
        if total == 0:
            continue
        draw = int(rng.integers(total))  # each position at depth d owns d consecutive numbers
        for depth in range(MIN_MOVES, len(layers)):
            if draw < depth * len(layers[depth]):
                boxes, player = divmod(layers[depth][draw // depth], height * width)
                return Room(height, width, frozenset(floor), frozenset(targets), frozenset(_bits(boxes)), player)
            draw -= depth * len(layers[depth])
    raise RuntimeError(
        f"no solvable {height}x{width} room with {num_boxes} boxes and an optimal solution of {MIN_MOVES}.."
        f"{search_depth} moves in {MAX_TRIES} topologies"
    )


def random_topology(rng: np.random.Generator, height: int, width: int) -> set[int]:
    """Floor cells (flat indices) of a random-walk room; the border stays wall."""
    grid = np.zeros((height, width), dtype=bool)
    num_steps = int(1.7 * (height + width))
    direction = _DIRECTIONS[int(rng.integers(4))]
    r, c = int(rng.integers(1, height)), int(rng.integers(1, width))
    for _ in range(num_steps):
        if rng.random() < 0.35:
            direction = _DIRECTIONS[int(rng.integers(4))]
        r = min(max(r + direction[0], 1), height - 2)
        c = min(max(c + direction[1], 1), width - 2)
        mask = _MASKS[int(rng.integers(len(_MASKS)))]
        for dr in range(3):
            for dc in range(3):
                if mask[dr][dc]:
                    grid[r - 1 + dr, c - 1 + dc] = True
    grid[[0, -1], :] = False
    grid[:, [0, -1]] = False
    return {int(i) for i in np.flatnonzero(grid)}


def reverse_search(height: int, width: int, floor: set[int], targets: list[int], search_depth: int) -> list[list[int]]:
    """Start positions up to ``search_depth`` moves from a solution, with no box on a target, by optimal distance.

    Breadth-first search backwards from every solved position: a backward move walks the player to a free
    neighbour, optionally pulling the box directly behind it along.

    Returns:
        ``layers[k]``: the positions whose optimal solution takes exactly ``k`` moves, packed as
        ``box_mask * height * width + player`` (bit ``c`` of ``box_mask`` marks a box on cell ``c``), in a
        deterministic order.
    """
    cells = height * width
    steps = (-width, width, -1, 1)
    free = bytearray(cells)
    for c in floor:
        free[c] = 1
    goal = sum(1 << t for t in targets)
    seen = {goal * cells + p for p in sorted(floor) if not goal >> p & 1}
    frontier = sorted(seen)
    layers = [[]]
    for _ in range(search_depth):
        nxt = []
        for key in frontier:
            boxes, player = divmod(key, cells)
            for d in steps:
                ahead = player + d
                if not free[ahead] or boxes >> ahead & 1:
                    continue
                child = key + d
                if child not in seen:
                    seen.add(child)
                    nxt.append(child)
                behind = player - d
                if boxes >> behind & 1:
                    child = (boxes ^ (1 << behind) ^ (1 << player)) * cells + ahead
                    if child not in seen:
                        seen.add(child)
                        nxt.append(child)
        layers.append([k for k in nxt if not (k // cells) & goal])
        frontier = nxt
        if not frontier or len(seen) > MAX_STATES:
            break
    return layers


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
