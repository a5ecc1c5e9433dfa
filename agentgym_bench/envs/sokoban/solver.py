"""Breadth-first Sokoban solver, optimal in moves (every step counts, pushes and plain walks alike).

States are packed into one int, ``box_mask * cells + player``, where bit ``c`` of ``box_mask`` marks a box on flat
cell ``c``. A box pushed onto a *dead* cell — one from which no push sequence can bring a box to any target, such as
a corner that is not a target — can never be solved, so such states are not expanded; that keeps the search small
without changing what is optimal.
"""

from __future__ import annotations

from .rules import ACTIONS, Room


def live_cells(room: Room) -> frozenset[int]:
    """Cells from which a lone box can be pushed to some target (other boxes ignored).

    Computed backwards from the targets: a box on ``y`` can have come from ``x = y - d`` if the player could stand on
    ``x - d`` to push it, i.e. both cells are floor.
    """
    steps = _steps(room.width)
    live = set(room.targets)
    todo = list(room.targets)
    while todo:
        y = todo.pop()
        for d in steps:
            x = y - d
            if x not in live and x in room.floor and x - d in room.floor:
                live.add(x)
                todo.append(x)
    return frozenset(live)


def solve(room: Room, max_depth: int | None = None) -> list[str] | None:
    """A shortest solution of ``room``.

    Args:
        room: The position to solve.
        max_depth: Give up on solutions longer than this many moves (``None``: search everything reachable).

    Returns:
        The action words of one shortest solution (``[]`` if already solved), or ``None`` if the room cannot be
        solved (within ``max_depth`` moves).
    """
    cells = room.height * room.width
    steps = _steps(room.width)
    free = bytearray(cells)
    for c in room.floor:
        free[c] = 1
    live = bytearray(cells)
    for c in live_cells(room):
        live[c] = 1
    goal = sum(1 << t for t in room.targets)
    start = sum(1 << b for b in room.boxes) * cells + room.player
    if start // cells == goal:
        return []
    parent = {start: (-1, -1)}
    frontier = [start]
    depth = 0
    while frontier and (max_depth is None or depth < max_depth):
        depth += 1
        nxt = []
        for key in frontier:
            boxes, player = divmod(key, cells)
            for a, d in enumerate(steps):
                ahead = player + d
                if not free[ahead]:
                    continue
                if boxes >> ahead & 1:
                    beyond = ahead + d
                    if not live[beyond] or boxes >> beyond & 1:
                        continue
                    moved = boxes ^ (1 << ahead) ^ (1 << beyond)
                    child = moved * cells + ahead
                    if child in parent:
                        continue
                    parent[child] = (key, a)
                    if moved == goal:
                        return _path(parent, child)
                else:
                    child = key + d
                    if child in parent:
                        continue
                    parent[child] = (key, a)
                nxt.append(child)
        frontier = nxt
    return None


def _steps(width: int) -> tuple[int, int, int, int]:
    """Flat-index offsets of Up, Down, Left, Right (the order of :data:`ACTIONS`)."""
    return (-width, width, -1, 1)


def _path(parent: dict[int, tuple[int, int]], key: int) -> list[str]:
    actions = []
    while True:
        key, a = parent[key]
        if a < 0:
            return actions[::-1]
        actions.append(ACTIONS[a])
