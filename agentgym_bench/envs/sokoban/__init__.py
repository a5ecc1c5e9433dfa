"""Sokoban, its pure rules kept apart from the env.

- ``rules.py``: the pure rules: a position, one move, the grid text;
- ``generator.py``: procedural rooms by reverse play, solvable by construction;
- ``solver.py``: a breadth-first solver, optimal in moves;
- ``game.py``: ``SokobanGame``, the core game env (text observations, one action word per step);
- ``render.py``: an RGB picture of a room.
"""

from .game import SokobanGame
from .rules import ACTIONS, VOCABS, Room, move
from .solver import solve

__all__ = ["ACTIONS", "VOCABS", "Room", "SokobanGame", "move", "solve"]
