"""Sokoban: pure rules (``rules``), room generation (``generator``), BFS solver (``solver``), the env (``game``)."""

from .game import SokobanGame
from .rules import ACTIONS, VOCABS, Room, move
from .solver import solve

__all__ = ["ACTIONS", "VOCABS", "Room", "SokobanGame", "move", "solve"]
