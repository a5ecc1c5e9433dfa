"""Pure Sokoban rules: a position, one move, and the grid text. No randomness, no spaces, no rewards.

A :class:`Room` is one Sokoban position: the fixed layout (walls, targets) plus where the boxes and the player are.
Cells are flat indices ``row * width + col``; the outermost ring of the grid is always wall, so a neighbour of a
floor cell is always inside the grid (``cell - width``, ``cell + width``, ``cell - 1``, ``cell + 1``).

The player moves one cell per action. Walking into a box pushes it one cell further in the same direction if that
cell is floor without a box; otherwise (wall, box behind the box, or a wall ahead) nothing moves. Boxes cannot be
pulled. The room is solved when every box is on a target.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIONS = ("Up", "Down", "Left", "Right")
"""The four action words, in the order used everywhere in this package."""


@dataclass(frozen=True)
class Vocab:
    """The seven grid symbols of one vocabulary."""

    wall: str
    empty: str
    target: str
    box_on_target: str
    box: str
    player: str
    player_on_target: str

    def legend(self) -> str:
        """Symbol meanings, e.g. ``"#: wall, _: empty, O: target, ..."``."""
        names = ("wall", "empty", "target", "box on target", "box", "player", "player on target")
        return ", ".join(f"{symbol}: {name}" for symbol, name in zip(self.symbols(), names, strict=True))

    def symbols(self) -> tuple[str, ...]:
        """The symbols in the order wall, empty, target, box on target, box, player, player on target."""
        return (self.wall, self.empty, self.target, self.box_on_target, self.box, self.player, self.player_on_target)


VOCABS = {
    "default": Vocab("#", "_", "O", "√", "X", "P", "S"),  # RAGEN's grid_lookup
    "alt": Vocab("W", ".", "G", "C", "B", "A", "@"),  # RAGEN's SokobanDifferentGridVocab
}
"""Grid vocabularies by name: ``"default"`` is RAGEN's, ``"alt"`` is RAGEN's different-grid-vocabulary test arm."""


@dataclass(frozen=True)
class Room:
    """One Sokoban position.

    Attributes:
        height: Rows of the grid, border included.
        width: Columns of the grid, border included.
        floor: Cells that are not wall (flat indices). Never contains a border cell.
        targets: Target cells; as many as there are boxes.
        boxes: Cells holding a box.
        player: The player's cell.
    """

    height: int
    width: int
    floor: frozenset[int]
    targets: frozenset[int]
    boxes: frozenset[int]
    player: int

    def offset(self, action: str) -> int:
        """Flat-index step of one of :data:`ACTIONS`."""
        return {"Up": -self.width, "Down": self.width, "Left": -1, "Right": 1}[action]

    @property
    def boxes_on_target(self) -> int:
        """Number of boxes standing on a target."""
        return len(self.boxes & self.targets)

    @property
    def is_solved(self) -> bool:
        """True when every box is on a target."""
        return self.boxes <= self.targets

    def to_text(self, vocab: Vocab = VOCABS["default"]) -> str:
        """The grid as text: one line per row, one symbol per cell, no trailing newline."""
        rows = []
        for r in range(self.height):
            row = []
            for cell in range(r * self.width, (r + 1) * self.width):
                on_target = cell in self.targets
                if cell not in self.floor:
                    row.append(vocab.wall)
                elif cell == self.player:
                    row.append(vocab.player_on_target if on_target else vocab.player)
                elif cell in self.boxes:
                    row.append(vocab.box_on_target if on_target else vocab.box)
                else:
                    row.append(vocab.target if on_target else vocab.empty)
            rows.append("".join(row))
        return "\n".join(rows)

    @classmethod
    def from_text(cls, text: str, vocab: Vocab = VOCABS["default"]) -> Room:
        """Parse a grid written with ``vocab`` (the inverse of :meth:`to_text`).

        Raises:
            ValueError: ragged rows, an unknown symbol, a non-wall border cell, not exactly one player, or a number of
                targets different from the number of boxes.
        """
        lines = text.strip("\n").split("\n")
        height, width = len(lines), len(lines[0])
        if any(len(line) != width for line in lines):
            raise ValueError(f"text: rows have different lengths: {[len(line) for line in lines]}")
        kind = dict(zip(vocab.symbols(), range(7), strict=True))
        floor, targets, boxes, players = set(), set(), set(), []
        for r, line in enumerate(lines):
            for c, symbol in enumerate(line):
                if symbol not in kind:
                    raise ValueError(f"text: unknown symbol {symbol!r} at row {r}, column {c}")
                k, cell = kind[symbol], r * width + c
                if k == 0:
                    continue
                if r in (0, height - 1) or c in (0, width - 1):
                    raise ValueError(f"text: border cell at row {r}, column {c} must be a wall, got {symbol!r}")
                floor.add(cell)
                if k in (2, 3, 6):
                    targets.add(cell)
                if k in (3, 4):
                    boxes.add(cell)
                if k in (5, 6):
                    players.append(cell)
        if len(players) != 1:
            raise ValueError(f"text: expected exactly one player, found {len(players)}")
        if len(targets) != len(boxes):
            raise ValueError(f"text: {len(boxes)} boxes but {len(targets)} targets")
        return cls(height, width, frozenset(floor), frozenset(targets), frozenset(boxes), players[0])


def move(room: Room, action: str) -> Room:
    """Apply one of :data:`ACTIONS`; returns ``room`` itself when the move is blocked.

    Args:
        room: The position before the move.
        action: ``"Up"``, ``"Down"``, ``"Left"`` or ``"Right"`` (exact spelling).

    Returns:
        The position after the move, or the same object if the player bumped into a wall or an unpushable box.
    """
    step = room.offset(action)
    ahead = room.player + step
    if ahead not in room.floor:
        return room
    boxes = room.boxes
    if ahead in boxes:
        beyond = ahead + step
        if beyond not in room.floor or beyond in boxes:
            return room
        boxes = (boxes - {ahead}) | {beyond}
    return Room(room.height, room.width, room.floor, room.targets, boxes, ahead)
