"""Sokoban pure rules, BFS solver and reverse-play generator (no Gymnasium env here)."""

from __future__ import annotations

import numpy as np
import pytest

from agentgym_bench.envs.sokoban import generator
from agentgym_bench.envs.sokoban.generator import MIN_MOVES, generate_room, random_topology, reverse_search
from agentgym_bench.envs.sokoban.rules import ACTIONS, VOCABS, Room, move
from agentgym_bench.envs.sokoban.solver import live_cells, solve

# (before, action, after); after == before means the move is blocked.
MOVES = [
    pytest.param("#####\n#P__#\n#_O_#\n#_X_#\n#####", "Right", "#####\n#_P_#\n#_O_#\n#_X_#\n#####", id="walk"),
    pytest.param("#####\n#P__#\n#_O_#\n#_X_#\n#####", "Up", "#####\n#P__#\n#_O_#\n#_X_#\n#####", id="wall"),
    pytest.param("######\n#PX__#\n#___O#\n######", "Right", "######\n#_PX_#\n#___O#\n######", id="push"),
    pytest.param("#####\n#_PX#\n#O__#\n#####", "Right", "#####\n#_PX#\n#O__#\n#####", id="box-against-wall"),
    pytest.param("######\n#PXX_#\n#_OO_#\n######", "Right", "######\n#PXX_#\n#_OO_#\n######", id="box-into-box"),
    pytest.param("######\n#PXO_#\n#____#\n######", "Right", "######\n#_P√_#\n#____#\n######", id="box-onto-target"),
    pytest.param("######\n#P√__#\n#____#\n######", "Right", "######\n#_SX_#\n#____#\n######", id="box-off-target"),
    pytest.param("######\n#PX__#\n#_O√_#\n######", "Down", "######\n#_X__#\n#PO√_#\n######", id="walk-down"),
    pytest.param("######\n#PO_X#\n#____#\n######", "Right", "######\n#_S_X#\n#____#\n######", id="onto-target"),
    pytest.param("######\n#_S_X#\n#____#\n######", "Left", "######\n#PO_X#\n#____#\n######", id="off-target"),
    pytest.param("######\n#P√O_#\n#___X#\n######", "Right", "######\n#_S√_#\n#___X#\n######", id="target-to-target"),
    pytest.param(
        "######\n#____#\n#_X__#\n#_P_O#\n######", "Up", "######\n#_X__#\n#_P__#\n#___O#\n######", id="push-up"
    ),
]


@pytest.mark.parametrize(("before", "action", "after"), MOVES)
def test_move_table(before, action, after):
    room = Room.from_text(before)
    moved = move(room, action)
    assert moved.to_text() == after
    assert (moved is room) == (before == after)


def test_text_round_trip_and_counts():
    text = "#######\n#S√X__#\n#_____#\n#######"
    room = Room.from_text(text)
    assert room.to_text() == text
    assert len(room.boxes) == len(room.targets) == 2
    assert room.boxes_on_target == 1
    assert not room.is_solved
    assert move(room, "Down").to_text() == "#######\n#O√X__#\n#P____#\n#######"


def test_alt_vocab_round_trip():
    default = "######\n#S√X_#\n#____#\n######"
    alt = default.translate(str.maketrans("#_O√XPS", "W.GCBA@"))
    room = Room.from_text(alt, VOCABS["alt"])
    assert room == Room.from_text(default)
    assert room.to_text(VOCABS["alt"]) == alt
    assert VOCABS["alt"].legend() == (
        "W: wall, .: empty, G: target, C: box on target, B: box, A: player, @: player on target"
    )
    assert VOCABS["default"].legend() == (
        "#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("####\n#P_#\n###", "different lengths"),
        ("####\n#PZ#\n####", "unknown symbol"),
        ("#_##\n#PX#\n#O_#\n####", "border"),
        ("#####\n#__X#\n#O__#\n#####", "exactly one player"),
        ("#####\n#PXX#\n#O__#\n#####", "2 boxes but 1 targets"),
    ],
)
def test_from_text_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        Room.from_text(text)


def test_solve_small_cases():
    assert solve(Room.from_text("######\n#P√__#\n######")) == []
    assert solve(Room.from_text("######\n#PXO_#\n######")) == ["Right"]
    # The player walks round to the box's right side, then pushes it left twice.
    assert solve(Room.from_text("######\n#O_X_#\n#___P#\n######")) == ["Up", "Left", "Left"]
    # Push up, walk round, push right: 4 moves (pushing right first takes 5).
    room = Room.from_text("######\n#__O_#\n#_X__#\n#_P__#\n#____#\n######")
    assert solve(room) == ["Up", "Left", "Up", "Right"]
    assert solve(room, max_depth=3) is None
    assert solve(room, max_depth=4) == ["Up", "Left", "Up", "Right"]
    # Box in a corner that is not a target; box on the top wall with the target elsewhere: unsolvable.
    assert solve(Room.from_text("######\n#X__O#\n#__P_#\n######")) is None
    assert solve(Room.from_text("######\n#_X__#\n#__P_#\n#___O#\n######")) is None


def test_live_cells():
    room = Room.from_text("######\n#____#\n#_X__#\n#__PO#\n######")
    # Top row and left column are dead (a box there never leaves them); so is the corner (3, 1).
    assert live_cells(room) == {r * 6 + c for r, c in [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (3, 4)]}


def _naive_solve_length(room: Room, limit: int = 60) -> int | None:
    """Plain BFS over Room objects with rules.move: no packing, no pruning (an independent reference)."""
    seen, frontier = {room}, [room]
    for depth in range(limit + 1):
        if any(r.is_solved for r in frontier):
            return depth
        nxt = []
        for r in frontier:
            for a in ACTIONS:
                m = move(r, a)
                if m not in seen:
                    seen.add(m)
                    nxt.append(m)
        frontier = nxt
    return None


@pytest.mark.parametrize(("dims", "boxes"), [((6, 6), 1), ((7, 7), 2)])
def test_solver_is_optimal_against_naive_bfs(dims, boxes):
    for seed in range(25):
        room = generate_room(np.random.default_rng(seed), *dims, boxes, 300)
        solution = solve(room)
        assert len(solution) == _naive_solve_length(room)
        for action in solution:
            room = move(room, action)
        assert room.is_solved


def test_reverse_search_distances_are_exact():
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 300:
        floor = random_topology(rng, 7, 7)
        if len(floor) < 4:
            continue
        targets = [int(c) for c in rng.choice(sorted(floor), size=2, replace=False)]
        layers = reverse_search(7, 7, floor, targets, 12)
        for depth, layer in enumerate(layers):
            for key in layer[:3]:
                boxes, player = divmod(key, 49)
                room = Room(7, 7, frozenset(floor), frozenset(targets), frozenset(_bits(boxes)), player)
                assert not room.boxes & room.targets
                assert len(solve(room)) == depth
                checked += 1


def _bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def test_generate_room_respects_search_depth_and_is_seeded():
    lengths = []
    for seed in range(100):
        room = generate_room(np.random.default_rng(seed), 8, 8, 2, 10)
        lengths.append(len(solve(room)))
        assert room == generate_room(np.random.default_rng(seed), 8, 8, 2, 10)
    assert MIN_MOVES <= min(lengths) and max(lengths) <= 10
    assert len(set(lengths)) > 4


def test_generate_room_gives_up_with_a_clear_error():
    # A 1x3 corridor never has a solution longer than 1 move.
    with pytest.raises(RuntimeError, match="no solvable 3x5 room"):
        generate_room(np.random.default_rng(0), 3, 5, 1, 300)


def test_default_rooms_are_neither_trivial_nor_out_of_ragen_budget():
    lengths = sorted(len(solve(generate_room(np.random.default_rng(seed), 6, 6, 1, 300))) for seed in range(300))
    assert lengths[0] >= MIN_MOVES and lengths[150] >= 4  # median at least 4 moves
    assert sum(k <= 10 for k in lengths) >= 0.85 * 300  # RAGEN's 10-action budget


def test_generation_is_bounded_by_a_count_of_search_states(monkeypatch):
    # 30x30 with 8 boxes never finds a start within the per-topology cap; a smaller total budget keeps this fast.
    monkeypatch.setattr(generator, "MAX_TOTAL_STATES", 400_000)
    with pytest.raises(generator.GenerationError, match="no solvable 30x30 room with 8 boxes") as error:
        generate_room(np.random.default_rng(0), 30, 30, 8, 300)
    assert "400,000 states" in str(error.value) and "fewer boxes" in str(error.value)
