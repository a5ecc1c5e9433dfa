"""SokobanGame: the core-env contract, rewards, validation, determinism, rendering and the oracle."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym_bench.envs.sokoban import ACTIONS, Room, SokobanGame, solve
from agentgym_bench.envs.sokoban.game import INSTRUCTIONS


def start(text: str, **kwargs) -> SokobanGame:
    """An env reset to a given grid."""
    lines = text.split("\n")
    env = SokobanGame(dim_room=(len(lines), len(lines[0])), num_boxes=text.count("X") + text.count("√"), **kwargs)
    env.reset(seed=0, options={"room": text})
    return env


# (grid, action, reward, effective, terminated)
REWARDS = [
    pytest.param("######\n#P__O#\n#_X__#\n######", "Right", -0.1, True, False, id="walk"),
    pytest.param("######\n#P__O#\n#_X__#\n######", "Up", -0.1, False, False, id="wall-bump"),
    pytest.param("#####\n#_PX#\n#O__#\n#####", "Right", -0.1, False, False, id="box-against-wall"),
    pytest.param("######\n#PXXO#\n#___O#\n######", "Right", -0.1, False, False, id="box-into-box"),
    pytest.param("#######\n#PXO__#\n#__X_O#\n#######", "Right", 0.9, True, False, id="box-onto-target"),
    pytest.param("#######\n#P√__O#\n#___X_#\n#######", "Right", -1.1, True, False, id="box-off-target"),
    pytest.param("#######\n#P√O__#\n#___X_#\n#######", "Right", -0.1, True, False, id="target-to-target"),
    pytest.param("######\n#PO_X#\n#____#\n######", "Right", -0.1, True, False, id="player-onto-target"),
    pytest.param("######\n#PXO_#\n#____#\n######", "Right", 10.9, True, True, id="solved"),
    pytest.param("#######\n#PXO__#\n#___√_#\n#######", "Right", 10.9, True, True, id="solved-two-boxes"),
]


@pytest.mark.parametrize(("grid", "action", "reward", "effective", "terminated"), REWARDS)
def test_reward_table(grid, action, reward, effective, terminated):
    env = start(grid)
    obs, r, term, trunc, info = env.step(action)
    assert r == pytest.approx(reward)
    assert type(r) is float and type(term) is bool and trunc is False
    assert term is terminated and info["success"] is terminated
    assert info["action_is_valid"] is True and info["action_is_effective"] is effective
    assert (obs != grid) is effective
    assert info["state_key"] == obs


def test_player_on_target_symbol():
    env = start("######\n#PO_X#\n#____#\n######")
    obs, *_ = env.step("Right")
    assert obs == "######\n#_S_X#\n#____#\n######"
    obs, *_ = env.step("left")
    assert obs == "######\n#PO_X#\n#____#\n######"


def test_invalid_words_and_case():
    env = start("######\n#P__O#\n#_X__#\n######")
    for bad in ["", "Jump", "up up", "<answer>Up</answer>", "Upp", None, 3]:
        obs, r, term, trunc, info = env.step(bad)
        assert (obs, r, term, trunc) == ("######\n#P__O#\n#_X__#\n######", 0.0, False, False)
        assert info["action_is_valid"] is False and info["action_is_effective"] is False
    obs, r, *_, info = env.step("  rIGHT \n")
    assert obs == "######\n#_P_O#\n#_X__#\n######" and info["action_is_valid"] is True


def test_finished_game_changes_nothing():
    env = start("######\n#PXO_#\n#____#\n######")
    env.step("Right")
    obs, r, term, trunc, info = env.step("Left")
    assert (obs, r, term, trunc) == ("######\n#_P√_#\n#____#\n######", 0.0, True, False)
    assert info["action_is_valid"] is False and info["success"] is True


def test_one_box_return_is_11_minus_a_tenth_per_move():
    env = SokobanGame()
    for seed in range(20):
        env.reset(seed=seed)
        plan = solve(env.room)
        total = sum(env.step(a)[1] for a in plan)
        assert env.room.is_solved
        assert total == pytest.approx(11 - 0.1 * len(plan))


def test_reset_info_and_spaces():
    env = SokobanGame()
    obs, info = env.reset(seed=1)
    assert info["instructions"] == INSTRUCTIONS
    assert info["legend"] == "#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target"
    assert info["valid_actions"] == list(ACTIONS) and info["state_key"] == obs and info["success"] is False
    assert "action_is_valid" not in info
    assert obs in env.observation_space and len(obs.split("\n")) == 6
    assert set(obs) <= set("#_O√XPS\n") and obs.count("P") + obs.count("S") == 1
    assert all(a in env.action_space for a in ACTIONS)


def test_alt_vocab_is_the_same_room_in_other_symbols():
    default, alt = SokobanGame(), SokobanGame(vocab="alt")
    for seed in range(10):
        obs, _ = default.reset(seed=seed)
        obs_alt, info = alt.reset(seed=seed)
        assert obs_alt == obs.translate(str.maketrans("#_O√XPS", "W.GCBA@"))
        assert obs_alt in alt.observation_space
    assert info["legend"] == "W: wall, .: empty, G: target, C: box on target, B: box, A: player, @: player on target"
    obs_alt, *_ = alt.step("Down")
    assert set(obs_alt) <= set("W.GCBA@\n")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"dim_room": (2, 6)}, "dim_room"),
        ({"dim_room": (6, 1)}, "dim_room"),
        ({"dim_room": (4, 4)}, "dim_room"),
        ({"dim_room": 6}, "dim_room"),
        ({"dim_room": (6, 6.5)}, "dim_room"),
        ({"num_boxes": 0}, "num_boxes"),
        ({"num_boxes": 15}, "num_boxes=15 does not fit: a 6x6 room has 16 floor cells"),
        ({"dim_room": (3, 5), "num_boxes": 2}, "num_boxes"),
        ({"search_depth": 2}, "search_depth"),
        ({"vocab": "emoji"}, "vocab"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        SokobanGame(**kwargs)


def test_bad_room_option():
    env = SokobanGame()
    with pytest.raises(ValueError, match="dim_room"):
        env.reset(options={"room": "#####\n#PXO#\n#####"})


def _episode(env: SokobanGame, seed: int, actions: list[str]) -> list:
    out = [env.reset(seed=seed)[0]]
    out += [env.step(a)[:3] for a in actions]
    return out


def test_same_seed_same_room_and_episode():
    actions = ["Up", "Left", "Down", "Down", "Right", "Up", "Right", "Left"]
    for kwargs in ({}, {"dim_room": (8, 8), "num_boxes": 2}):
        a, b = SokobanGame(**kwargs), SokobanGame(**kwargs)
        for seed in range(5):
            assert _episode(a, seed, actions) == _episode(b, seed, actions)
        rooms = {a.reset(seed=seed)[0] for seed in range(30)}
        assert len(rooms) > 25


def test_same_seed_same_room_across_processes():
    code = (
        "import json; from agentgym_bench.envs.sokoban import SokobanGame; "
        "env = SokobanGame(dim_room=(8, 8), num_boxes=2); "
        "print(json.dumps([env.reset(seed=s)[0] for s in range(20)]))"
    )
    here = [SokobanGame(dim_room=(8, 8), num_boxes=2).reset(seed=s)[0] for s in range(20)]
    for hash_seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert json.loads(result.stdout) == here


def test_reset_does_not_touch_global_rngs():
    import random

    random.seed(5)
    np.random.seed(5)
    state, np_state = random.getstate(), np.random.get_state()
    SokobanGame(dim_room=(8, 8), num_boxes=2).reset(seed=3)
    assert random.getstate() == state
    assert all(np.array_equal(x, y) for x, y in zip(np.random.get_state(), np_state, strict=True))


@pytest.mark.parametrize("kwargs", [{}, {"render_mode": "ansi"}, {"render_mode": "rgb_array", "vocab": "alt"}])
def test_check_env(kwargs):
    check_env(SokobanGame(**kwargs), skip_render_check=False)


def test_render_modes():
    grid = "######\n#S√X_#\n#____#\n######"
    assert start(grid, render_mode="ansi").render() == grid
    with pytest.warns(UserWarning, match="render_mode"):
        assert start(grid).render() is None
    image = start(grid, render_mode="rgb_array").render()
    assert image.shape == (4 * 16, 6 * 16, 3) and image.dtype == np.uint8
    centres = {
        name: tuple(image[r * 16 + 5, c * 16 + 8])
        for name, (r, c) in {
            "wall": (0, 0),
            "player": (1, 1),
            "box_on_target": (1, 2),
            "box": (1, 3),
            "floor": (1, 4),
        }.items()
    }
    assert len(set(centres.values())) == 5
    tile = image[16:32, 16:32]  # player on target: the target outline stays visible around the disc
    assert (tile == (200, 40, 40)).all(axis=-1).sum() > 10


def test_oracle_follows_a_shortest_solution_within_budget():
    env = SokobanGame()
    for seed in range(30):
        env.reset(seed=seed)
        optimal = solve(env.room)
        assert env.oracle_turn(5, 10, 5) == optimal[:5]
        assert env.oracle_turn(5, 3, 5) == optimal[:3]
        assert env.oracle_turn(5, 0, 5) == []
        for action in optimal:
            env.step(action)
        assert env.oracle_turn(5, 10, 5) == []


def test_oracle_in_unsolvable_position_sends_one_effective_move():
    env = start("######\n#X__O#\n#__P_#\n######")
    moves = env.oracle_turn(5, 10, 5)
    assert len(moves) == 1
    assert env.step(moves[0])[4]["action_is_effective"]


def _play(env: SokobanGame, seed: int, policy, turns: int = 5, per_turn: int = 5, budget: int = 10) -> bool:
    env.reset(seed=seed)
    left = budget
    for turn in range(turns):
        for action in policy(env, turns - turn, left, per_turn):
            *_, term, _, info = env.step(action)
            left -= 1
            if term:
                return info["success"]
        if left <= 0:
            return False
    return False


def test_oracle_solves_rooms_and_beats_random():
    env = SokobanGame()
    rng = np.random.default_rng(0)

    def random_policy(env, turns_left, actions_left, per_turn):
        return [ACTIONS[i] for i in rng.integers(4, size=min(actions_left, per_turn))]

    seeds = range(200)
    oracle = [_play(env, s, SokobanGame.oracle_turn) for s in seeds]
    fits = [len(solve(Room.from_text(env.reset(seed=s)[0]))) <= 10 for s in seeds]
    assert oracle == fits  # the oracle succeeds exactly when a solution fits RAGEN's 10 actions
    random = [_play(env, s, random_policy) for s in seeds]
    assert sum(oracle) >= 0.85 * len(seeds) and sum(random) < 0.5 * sum(oracle)


@pytest.mark.parametrize(("dims", "boxes", "seeds"), [((6, 6), 1, 1000), ((8, 8), 2, 1000)])
def test_every_generated_room_is_solvable(dims, boxes, seeds):
    env = SokobanGame(dim_room=dims, num_boxes=boxes)
    for seed in range(seeds):
        obs, _ = env.reset(seed=seed)
        solution = solve(env.room)
        assert solution is not None and 3 <= len(solution), obs
        assert Room.from_text(obs) == env.room


@pytest.mark.parametrize(("dims", "boxes", "message"), [
    ((3, 5), 1, "corridor too short"),
    ((5, 3), 1, "corridor too short"),
    ((3, 6), 1, "corridor too short"),
    ((3, 9), 2, "one-cell corridor"),
    ((33, 33), 1, "at most 32"),
    ((30, 30), 8, "at most 5 boxes"),
])
def test_shapes_that_cannot_generate_are_refused_by_the_constructor(dims, boxes, message):
    with pytest.raises(ValueError, match=message):
        SokobanGame(dim_room=dims, num_boxes=boxes)


def test_the_shortest_corridor_allowed_generates():
    obs, _ = SokobanGame(dim_room=(3, 7)).reset(seed=0)
    assert obs.count("\n") == 2

