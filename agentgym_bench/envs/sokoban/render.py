"""RGB picture of a Sokoban room, drawn with numpy only.

Each cell is a ``CELL`` x ``CELL`` tile: walls dark slate with a lighter mortar line, floor beige, targets a red
square outline, boxes brown crates (green when on a target), the player a blue disc.
"""

from __future__ import annotations

import numpy as np

from .rules import Room

CELL = 16
"""Pixels per grid cell."""

_WALL = (70, 72, 84)
_MORTAR = (110, 112, 124)
_FLOOR = (232, 222, 196)
_TARGET = (200, 40, 40)
_BOX = (168, 112, 52)
_BOX_ON_TARGET = (60, 160, 70)
_RIM = (60, 40, 20)
_PLAYER = (40, 90, 210)


def _tiles() -> dict[str, np.ndarray]:
    """The tile pictures, keyed by what the cell holds."""
    size = CELL
    yy, xx = np.mgrid[0:size, 0:size]

    wall = np.empty((size, size, 3), np.uint8)
    wall[:] = _WALL
    wall[size // 2, :] = _MORTAR
    wall[:, size - 1] = _MORTAR

    floor = np.empty((size, size, 3), np.uint8)
    floor[:] = _FLOOR

    target = floor.copy()
    edge = np.minimum.reduce([yy, xx, size - 1 - yy, size - 1 - xx])  # distance to the tile border
    target[(edge >= 2) & (edge <= 3)] = _TARGET

    def box(colour: tuple[int, int, int]) -> np.ndarray:
        tile = floor.copy()
        tile[edge >= 1] = _RIM
        tile[edge >= 3] = colour
        tile[((yy == xx) | (yy == size - 1 - xx)) & (edge >= 3)] = _RIM
        return tile

    centre = (size - 1) / 2
    disc = (yy - centre) ** 2 + (xx - centre) ** 2 <= (size * 0.25) ** 2
    player = floor.copy()
    player[disc] = _PLAYER
    player_on_target = target.copy()
    player_on_target[disc] = _PLAYER
    return {
        "wall": wall,
        "empty": floor,
        "target": target,
        "box": box(_BOX),
        "box_on_target": box(_BOX_ON_TARGET),
        "player": player,
        "player_on_target": player_on_target,
    }


_TILES = _tiles()


def render_rgb(room: Room) -> np.ndarray:
    """The room as a ``uint8`` array of shape ``(height * CELL, width * CELL, 3)``."""
    image = np.empty((room.height * CELL, room.width * CELL, 3), np.uint8)
    for r in range(room.height):
        for c in range(room.width):
            cell = r * room.width + c
            on_target = cell in room.targets
            if cell not in room.floor:
                name = "wall"
            elif cell == room.player:
                name = "player_on_target" if on_target else "player"
            elif cell in room.boxes:
                name = "box_on_target" if on_target else "box"
            else:
                name = "target" if on_target else "empty"
            image[r * CELL : (r + 1) * CELL, c * CELL : (c + 1) * CELL] = _TILES[name]
    return image
