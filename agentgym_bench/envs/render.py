"""Tiny numpy drawing helpers for ``render_mode="rgb_array"`` pictures (no fonts, no extra dependencies)."""

from __future__ import annotations

import numpy as np

Color = tuple[int, int, int]


def canvas(height: int, width: int, color: Color) -> np.ndarray:
    """A ``(height, width, 3)`` uint8 image filled with ``color``."""
    img = np.empty((height, width, 3), dtype=np.uint8)
    img[:] = color
    return img


def fill_rect(img: np.ndarray, top: int, left: int, height: int, width: int, color: Color) -> None:
    """Paint an axis-aligned rectangle in place (clipped to the image)."""
    img[max(top, 0) : top + height, max(left, 0) : left + width] = color


def fill_disc(img: np.ndarray, center_y: float, center_x: float, radius: float, color: Color) -> None:
    """Paint a filled disc in place."""
    ys, xs = np.ogrid[: img.shape[0], : img.shape[1]]
    img[(ys - center_y) ** 2 + (xs - center_x) ** 2 <= radius**2] = color


def grid_image(cell_colors: list[list[Color]], cell: int = 32, line_color: Color = (40, 40, 60)) -> np.ndarray:
    """A picture of a grid: one ``cell``-pixel square per entry of ``cell_colors`` with 1-pixel lines between."""
    rows, cols = len(cell_colors), len(cell_colors[0])
    img = canvas(rows * cell + 1, cols * cell + 1, line_color)
    for r, row in enumerate(cell_colors):
        for c, color in enumerate(row):
            fill_rect(img, r * cell + 1, c * cell + 1, cell - 1, cell - 1, color)
    return img
