"""Procedural Sokoban rooms by reverse play, solvable by construction, drawn from a numpy Generator.

1. Topology: a random walk stamps small floor masks into a walled grid (gym-sokoban's ``room_topology_generation``,
   ``int(1.7 * (height + width))`` steps, direction change probability 0.35).
2. Targets: ``num_boxes`` distinct floor cells. The floor and the targets decide the room's content split
   (:func:`layout_text`, :func:`agentgym_bench.seeds.content_split`): a layout of another split than the one asked
   for is redrawn before any search, so every start position of a layout belongs to that layout's split.
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

Bounds: the backward search of one topology keeps at most ``MAX_STATES`` states (memory: under 100 MB for a 32x32
room), and one call explores at most ``MAX_TOTAL_STATES`` states over all its topologies (time: 20-30 s for a
30x30 room on a shared 2-core VM, milliseconds for the registered sizes; ``benchmarks/sokoban_limits.md``). Both
are counts, not clocks, so whether a seed generates does not depend on the machine. Past either bound
:func:`generate_room` raises :class:`GenerationError`. What can never work is refused earlier, by
:func:`check_feasible` (the game's constructor calls it).
"""

from __future__ import annotations

import numpy as np

from agentgym_bench.envs.draw_cache import Draws
from agentgym_bench.seeds import in_split

from .rules import Room

MIN_MOVES = 3
"""Shortest optimal solution a generated room may have."""

MAX_TRIES = 1000
"""Topologies tried before :func:`generate_room` gives up."""

MAX_STATES = 200_000
"""Cap on backward-search states per topology (only reached by large rooms with many boxes)."""

MAX_TOTAL_STATES = 4_000_000
"""Cap on backward-search states over all the topologies one :func:`generate_room` call tries."""

MAX_SIDE = 32
"""Longest room side (border included): a search state is an integer of one bit per cell."""

MAX_BOXES = 5
"""Most boxes: a start needs every box pulled off its target, and past 5 boxes the backward search rarely gets there
within ``MAX_STATES`` (30x30: 4 of 8 topologies with 5 boxes, 1 of 8 with 6, 0 of 8 with 7 or 8)."""


class GenerationError(RuntimeError):
    """No room was found within the generator's bounds (see the module docstring)."""


def check_feasible(height: int, width: int, num_boxes: int) -> None:
    """ValueError naming ``dim_room`` / ``num_boxes`` if no room of this shape can ever be generated.

    Sides are at most :data:`MAX_SIDE` and boxes at most :data:`MAX_BOXES`. A room 3 cells high or wide is a
    one-cell corridor: a box there can only be pushed along it and cannot pass another box, so it takes exactly one
    box, and a corridor of ``L`` floor cells has no solution longer than ``L - 2`` moves, so ``L`` must be at least
    ``MIN_MOVES + 2`` (the room at least ``MIN_MOVES + 4`` long): 3x5 and 3x6 can never be generated.
    """
    if max(height, width) > MAX_SIDE:
        raise ValueError(f"dim_room=({height}, {width}): sides are at most {MAX_SIDE} (generator.MAX_SIDE)")
    if num_boxes > MAX_BOXES:
        raise ValueError(f"num_boxes={num_boxes}: the generator finds rooms for at most {MAX_BOXES} boxes "
                         "within its search bounds (generator.MAX_BOXES)")
    if min(height, width) == 3:
        if num_boxes > 1:
            raise ValueError(f"num_boxes={num_boxes} cannot be solved in a {height}x{width} room: it is a one-cell "
                             "corridor, where boxes cannot pass each other; use 1 box or a wider room")
        if max(height, width) < MIN_MOVES + 4:
            raise ValueError(f"dim_room=({height}, {width}) is a corridor too short for a puzzle of at least "
                             f"{MIN_MOVES} moves; use at least {MIN_MOVES + 4} cells along it, or a wider room")

_MASKS = (
    ((0, 0, 0), (1, 1, 1), (0, 0, 0)),
    ((0, 1, 0), (0, 1, 0), (0, 1, 0)),
    ((0, 0, 0), (1, 1, 0), (0, 1, 0)),
    ((0, 0, 0), (1, 1, 0), (1, 1, 0)),
    ((0, 0, 0), (0, 1, 1), (0, 1, 0)),
)
_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


def generate_room(rng: np.random.Generator, height: int, width: int, num_boxes: int, search_depth: int,
                  split: str | None = None, remember: bool = False) -> Room:
    """Draw a solvable room.

    Args:
        rng: The only source of randomness.
        height: Rows, border included.
        width: Columns, border included.
        num_boxes: Boxes (and targets).
        search_depth: Longest optimal solution, in moves, a generated room may have.
        split: The content split the room's layout must belong to (``"train"``, ``"validation"``, ``"test"``), or
            ``None`` for any layout. A layout of another split counts as a topology tried.
        remember: Whether a held-out split's call may replay only its accepted topology the next time it starts
            from the same ``rng`` state (a seeded reset; :mod:`agentgym_bench.envs.draw_cache`): the same room, and
            ``rng`` left where the full loop leaves it.

    Returns:
        A room whose optimal solution takes between ``MIN_MOVES`` and ``search_depth`` moves.

    Raises:
        GenerationError: if ``MAX_TRIES`` topologies, or ``MAX_TOTAL_STATES`` search states, admit no such room.
    """
    explored = tries = 0
    draws = Draws(rng, ("sokoban.generate_room", height, width, num_boxes, search_depth), split, remember)
    for attempt in draws.attempts(MAX_TRIES):
        if explored >= MAX_TOTAL_STATES:
            break
        tries = attempt
        floor = random_topology(rng, height, width)
        if len(floor) < num_boxes + 2:
            continue
        cells = sorted(floor)
        targets = [int(c) for c in rng.choice(cells, size=num_boxes, replace=False)]
        if not in_split(layout_text(height, width, floor, targets), split):
            continue
        layers, seen = _reverse_search(height, width, floor, targets, search_depth)
        explored += seen
        total = sum(depth * len(layers[depth]) for depth in range(MIN_MOVES, len(layers)))
        if total == 0:
            continue
        draw = int(rng.integers(total))  # each position at depth d owns d consecutive numbers
        for depth in range(MIN_MOVES, len(layers)):
            if draw < depth * len(layers[depth]):
                boxes, player = divmod(layers[depth][draw // depth], height * width)
                draws.accept()
                return Room(height, width, frozenset(floor), frozenset(targets), frozenset(_bits(boxes)), player)
            draw -= depth * len(layers[depth])
    where = "" if split is None else f" of the {split} split"
    raise GenerationError(
        f"no solvable {height}x{width} room{where} with {num_boxes} boxes and an optimal solution of {MIN_MOVES}.."
        f"{search_depth} moves in {tries} topologies ({explored:,} search states; the bounds are {MAX_TRIES} "
        f"topologies and {MAX_TOTAL_STATES:,} states); use fewer boxes, a smaller room or a larger search_depth"
    )


def layout_text(height: int, width: int, floor: set[int] | frozenset[int], targets: list[int] | frozenset[int]) -> str:
    """The canonical text of a room's layout (walls and targets), whose hash decides its content split:
    ``"sokoban 6x6 floor=7,8,... targets=9"`` (flat cell indices, ascending)."""
    cells = ",".join(map(str, sorted(floor)))
    return f"sokoban {height}x{width} floor={cells} targets={','.join(map(str, sorted(targets)))}"


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
    return _reverse_search(height, width, floor, targets, search_depth)[0]


def _reverse_search(height: int, width: int, floor: set[int], targets: list[int],
                    search_depth: int) -> tuple[list[list[int]], int]:
    """:func:`reverse_search`'s layers, and the number of states it visited."""
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
    return layers, len(seen)


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
