"""FrozenLakeGame: rules, slips, maps, determinism, contract, and the exact budgeted oracle."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
from collections import deque

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym_bench.envs.frozen_lake import FrozenLakeGame
from agentgym_bench.envs.frozen_lake_rules import (
    ACTIONS,
    outcome_probs,
    sample_direction,
    step_position,
    transition_matrices,
)

LEFT, DOWN, RIGHT, UP = range(4)


def set_map(env: FrozenLakeGame, desc: tuple[str, ...], pos: tuple[int, int]) -> None:
    """Put a reset env on a hand-made map (the rules read only ``desc`` and ``pos``)."""
    env.desc, env.pos, env._planners = desc, pos, {}


def play(env, seed, policy, turns, per_turn, max_actions):
    """The agent budgets, locally: ``turns`` turns of up to ``per_turn`` actions, ``max_actions`` in all."""
    _, info = env.reset(seed=seed)
    left, total = max_actions, 0.0
    for turn in range(turns):
        if left == 0:
            break
        actions = policy(env, turns - turn, left, per_turn)
        assert 1 <= len(actions) <= min(per_turn, left)
        terminated = False
        for action in actions:
            _, reward, terminated, _, info = env.step(action)
            left, total = left - 1, total + reward
            if terminated:
                break
        if terminated:
            break
    return info["success"], total


def oracle_policy(env, turns_left, actions_left, per_turn):
    return env.oracle_turn(turns_left, actions_left, per_turn)


# ----- pure rules -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pos, direction, expected",
    [
        ((1, 1), LEFT, (1, 0)),
        ((1, 1), DOWN, (2, 1)),
        ((1, 1), RIGHT, (1, 2)),
        ((1, 1), UP, (0, 1)),
        ((0, 0), LEFT, (0, 0)),
        ((0, 0), UP, (0, 0)),
        ((3, 3), DOWN, (3, 3)),
        ((3, 3), RIGHT, (3, 3)),
        ((0, 3), RIGHT, (0, 3)),
        ((3, 0), LEFT, (3, 0)),
        ((3, 0), UP, (2, 0)),
    ],
)
def test_step_position_moves_and_clamps(pos, direction, expected):
    assert step_position(pos, direction, 4) == expected


def test_outcome_probs_perpendicular_never_backwards():
    for direction in range(4):
        outcomes = outcome_probs(direction, True, 0.5)
        assert sorted(d for _, d in outcomes) == sorted([direction, (direction - 1) % 4, (direction + 1) % 4])
        assert (direction + 2) % 4 not in [d for _, d in outcomes]
        assert math.isclose(sum(p for p, _ in outcomes), 1.0)
        assert outcomes[0] == (0.5, direction)
        assert outcome_probs(direction, False, 0.5) == [(1.0, direction)]


@pytest.mark.parametrize("success_rate", [1 / 3, 0.8])
def test_slip_frequencies(success_rate):
    rng = np.random.default_rng(7)
    n = 30_000
    counts = np.zeros(4)
    for _ in range(n):
        counts[sample_direction(RIGHT, True, success_rate, rng)] += 1
    side = (1 - success_rate) / 2
    for direction, prob in ((RIGHT, success_rate), (UP, side), (DOWN, side), (LEFT, 0.0)):
        sigma = math.sqrt(n * prob * (1 - prob))
        assert abs(counts[direction] - n * prob) <= 4 * sigma, (direction, counts)


def test_transition_matrices_rows_sum_to_one_and_terminals_absorb():
    desc = ("SFFH", "FFFF", "FHFF", "FFFG")
    trans = transition_matrices(desc, True, 1 / 3)
    assert np.allclose(trans.sum(axis=2), 1.0)
    assert np.all(trans[:, 3, 3] == 1.0) and np.all(trans[:, 15, 15] == 1.0)
    # from (1, 2), Up: intended (0, 2), sideways (1, 1) and (1, 3)
    assert np.isclose(trans[UP, 6, 2], 1 / 3) and np.isclose(trans[UP, 6, 5], 1 / 3)
    assert np.isclose(trans[UP, 6, 7], 1 / 3)
    # from the corner (0, 0), Left: stays w.p. 1/3 (straight) + 1/3 (Up slip), Down w.p. 1/3
    assert np.isclose(trans[LEFT, 0, 0], 2 / 3) and np.isclose(trans[LEFT, 0, 4], 1 / 3)


# ----- the env: moves, holes, goal, words -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pos, action, expected",
    [((0, 1), "Left", (0, 0)), ((0, 1), "Down", (1, 1)), ((0, 1), "Right", (0, 2)), ((0, 1), "Up", (0, 1))],
)
def test_non_slippery_moves_exactly(pos, action, expected):
    env = FrozenLakeGame(is_slippery=False)
    env.reset(seed=0)
    set_map(env, ("SFFF", "FFFF", "FFHF", "FFFG"), pos)
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.pos == expected
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["action_is_valid"] is True and info["action_is_effective"] is (expected != pos)
    assert obs.split("\n")[expected[0]][expected[1]] == "P" and obs.count("P") == 1
    assert info["state_key"] == obs


def test_hole_ends_the_episode_without_reward():
    env = FrozenLakeGame(is_slippery=False)
    env.reset(seed=0)
    set_map(env, ("SFFF", "FFFF", "FFHF", "FFFG"), (1, 2))
    obs, reward, terminated, _, info = env.step("down")
    assert obs == "____\n____\n__X_\n___G"
    assert (reward, terminated, info["success"], info["valid_actions"]) == (0.0, True, False, [])
    again = env.step("Up")
    assert again[:4] == (obs, 0.0, True, False) and again[4]["action_is_valid"] is False


def test_goal_pays_one_and_ends_the_episode():
    env = FrozenLakeGame(is_slippery=False)
    env.reset(seed=0)
    set_map(env, ("SFFF", "FFFF", "FFHF", "FFFG"), (3, 2))
    obs, reward, terminated, _, info = env.step(" RIGHT ")
    assert obs == "____\n____\n__O_\n___√"
    assert (reward, terminated, info["success"]) == (1.0, True, True)
    assert isinstance(reward, float) and type(terminated) is bool


@pytest.mark.parametrize("word", ["", "Jump", "left!", "Up || Left", "<answer>Up</answer>", "u p", 3, None])
def test_invalid_words_change_nothing(word):
    env = FrozenLakeGame()
    obs, _ = env.reset(seed=3)
    pos = env.pos
    obs2, reward, terminated, truncated, info = env.step(word)
    assert (obs2, reward, terminated, truncated, env.pos) == (obs, 0.0, False, False, pos)
    assert info["action_is_valid"] is False and info["action_is_effective"] is False
    assert info["valid_actions"] == list(ACTIONS)


def test_reset_info_and_observation():
    env = FrozenLakeGame()
    obs, info = env.reset(seed=0)
    rows = obs.split("\n")
    assert len(rows) == 4 and all(len(r) == 4 for r in rows)
    assert set(obs) <= set("PO_G\n") and obs.count("P") == 1 and obs.count("G") == 1
    assert info["state_key"] == obs and info["success"] is False and info["valid_actions"] == list(ACTIONS)
    assert "avoid the holes" in info["instructions"].lower() and "slippery" in info["instructions"]
    assert "forbid" not in info["instructions"].lower()
    assert "slippery" not in FrozenLakeGame(is_slippery=False).reset(seed=0)[1]["instructions"]
    assert "O: hole" in info["legend"] and "√" in info["legend"]
    assert obs in env.observation_space


def test_maps_over_1000_seeds():
    env = FrozenLakeGame()
    holes = 0
    for seed in range(1000):
        env.reset(seed=seed)
        flat = "".join(env.desc)
        assert flat.count("S") == 1 and flat.count("G") == 1
        start, goal = divmod(flat.index("S"), 4), divmod(flat.index("G"), 4)
        assert start == env.pos and start != goal
        assert bfs_distance(env.desc, start, goal) is not None
        holes += flat.count("H")
    # about 20% holes on the 14 free tiles; resampling unsolvable maps pulls it slightly down
    assert 0.17 < holes / (1000 * 14) < 0.205


@functools.cache
def _seed_maps(size, p):
    env = FrozenLakeGame(size=size, p=p)
    return [env.reset(seed=s)[0] for s in range(200)]


def test_maps_differ_across_seeds_and_sizes():
    maps = _seed_maps(4, 0.8)
    assert len(set(maps)) > 150
    big = _seed_maps(7, 0.6)
    assert all(len(m.split("\n")) == 7 for m in big)


def bfs_distance(desc, start, goal):
    size = len(desc)
    dist, queue = {start: 0}, deque([start])
    while queue:
        pos = queue.popleft()
        if pos == goal:
            return dist[pos]
        for direction in range(4):
            nxt = step_position(pos, direction, size)
            if nxt not in dist and desc[nxt[0]][nxt[1]] != "H":
                dist[nxt] = dist[pos] + 1
                queue.append(nxt)
    return None


def goal_distance(env):
    """Moves from the player to the goal on ``env``'s map, around holes (None if unreachable)."""
    return bfs_distance(env.desc, env.pos, divmod("".join(env.desc).index("G"), env.size))


# ----- determinism --------------------------------------------------------------------------------------------------

_TRAJECTORIES = """
from agentgym_bench.envs.frozen_lake import FrozenLakeGame
env, out = FrozenLakeGame(), []
for seed in range(20):
    out.append(env.reset(seed=seed)[0])
    for action in ["Up", "Right", "Down", "Left"] * 3:
        out.append(env.step(action)[0])
print(repr(out))
"""


def test_same_seed_same_map_and_slips_across_processes():
    namespace: dict = {}
    exec(_TRAJECTORIES.replace("print(repr(out))", ""), namespace)
    here = namespace["out"]
    other = subprocess.run([sys.executable, "-c", _TRAJECTORIES], capture_output=True, text=True, check=True)
    assert repr(here) == other.stdout.strip()
    assert len(set(here)) > 50
    env = FrozenLakeGame()
    replays = [[env.reset(seed=5)[0]] + [env.step("Down")[0] for _ in range(6)] for _ in range(2)]
    assert replays[0] == replays[1]


# ----- validation and contract --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"size": 1}, "size"),
        ({"size": 2.5}, "size"),
        ({"size": True}, "size"),
        ({"p": 0.0}, "p="),
        ({"p": 1.5}, "p="),
        ({"p": float("nan")}, "p="),
        ({"success_rate": -0.1}, "success_rate"),
        ({"success_rate": 1.1}, "success_rate"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_validation_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FrozenLakeGame(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{}, {"render_mode": "ansi"}, {"render_mode": "rgb_array"}, {"is_slippery": False, "size": 6}]
)
def test_check_env(kwargs):
    check_env(FrozenLakeGame(**kwargs))


def test_check_env_through_the_registry():
    import agentgym_bench  # noqa: F401 - registers the ids

    check_env(gym.make("agentgym/FrozenLake-v0", render_mode="ansi").unwrapped)


def test_render_modes():
    env = FrozenLakeGame(render_mode="ansi")
    obs, _ = env.reset(seed=1)
    assert env.render() == obs
    env = FrozenLakeGame(render_mode="rgb_array")
    env.reset(seed=1)
    set_map(env, ("SFFF", "FFFF", "FFHF", "FFFG"), (0, 1))
    img = env.render()
    assert img.dtype == np.uint8 and img.shape == (129, 129, 3)
    assert tuple(img[16, 48]) == (210, 40, 40)  # player disc at the centre of cell (0, 1)
    assert tuple(img[80, 80]) == (20, 40, 110)  # hole (2, 2)
    assert tuple(img[112, 112]) == (230, 180, 40)  # goal (3, 3)
    assert tuple(img[16, 16]) == (190, 225, 245)  # ice


# ----- oracle -------------------------------------------------------------------------------------------------------


def brute_force_value(desc, pos, turns, actions, per_turn, success_rate=1 / 3, is_slippery=True):
    """Exact optimum by plain recursion over every open-loop sequence: an independent check of the planner."""
    size = len(desc)

    @functools.cache
    def value(pos, turns, actions):
        if turns == 0 or actions == 0:
            return 0.0
        best = 0.0
        for length in range(1, min(per_turn, actions) + 1):
            for seq in np.ndindex(*(4,) * length):
                best = max(best, run(pos, seq, turns, actions - length))
        return best

    def run(pos, seq, turns, actions):
        if desc[pos[0]][pos[1]] == "G":
            return 1.0
        if desc[pos[0]][pos[1]] == "H":
            return 0.0
        if not seq:
            return value(pos, turns - 1, actions)
        return sum(
            prob * run(step_position(pos, actual, size), seq[1:], turns, actions)
            for prob, actual in outcome_probs(seq[0], is_slippery, success_rate)
        )

    return value(pos, turns, actions)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("turns, actions, per_turn", [(1, 3, 3), (2, 4, 2), (3, 4, 2), (3, 3, 3)])
def test_oracle_value_equals_brute_force(seed, turns, actions, per_turn):
    env = FrozenLakeGame()
    env.reset(seed=seed)
    expected = brute_force_value(env.desc, env.pos, turns, actions, per_turn)
    assert env.oracle_value(turns, actions, per_turn) == pytest.approx(expected, abs=1e-9)


def test_oracle_non_slippery_value_is_reachability():
    env = FrozenLakeGame(is_slippery=False)
    for seed in range(100):
        env.reset(seed=seed)
        dist = goal_distance(env)
        for turns, actions, per_turn in ((5, 10, 5), (5, 10, 2), (2, 3, 1), (1, 4, 4)):
            reachable = dist <= min(actions, turns * per_turn)
            assert env.oracle_value(turns, actions, per_turn) == pytest.approx(float(reachable))
        assert play(env, seed, oracle_policy, 5, 5, 10)[0] is (dist <= 10)


def test_oracle_non_slippery_takes_a_shortest_path():
    # Every move the oracle sends brings the goal one step closer, so a reachable goal takes ceil(dist / k) turns.
    # (Before the "soonest" tie-break it sent one Left a turn into a wall until the budget forced the real path.)
    env = FrozenLakeGame(is_slippery=False)
    for seed in range(60):
        env.reset(seed=seed)
        dist = goal_distance(env)
        if dist > 10:
            continue
        turns, left = 0, 10
        while not env.terminated:
            plan = env.oracle_turn(5 - turns, left, 2)
            turns += 1
            for action in plan:
                before = goal_distance(env)
                env.step(action)
                left -= 1
                assert env.terminated or goal_distance(env) == before - 1
        assert env.tile == "G" and turns == math.ceil(dist / 2)


@pytest.mark.parametrize("seed", [4, 11])
def test_oracle_value_matches_monte_carlo(seed):
    env = FrozenLakeGame()
    env.reset(seed=seed)
    expected = env.oracle_value(5, 10, 2)
    start, n, wins = env.pos, 3000, 0
    for i in range(n):
        env.pos = start  # same map and planner ...
        env.np_random = np.random.default_rng([seed, i])  # ... fresh slips
        left = 10
        for turn in range(5):
            actions = env.oracle_turn(5 - turn, left, 2)
            assert 1 <= len(actions) <= min(2, left)
            for action in actions:
                _, _, terminated, _, info = env.step(action)
                left -= 1
                if terminated:
                    break
            if env.terminated or left == 0:
                break
        wins += info["success"]
    sigma = math.sqrt(expected * (1 - expected) / n)
    assert abs(wins / n - expected) <= 4 * sigma + 1e-9


def test_oracle_turn_respects_budgets_and_ends():
    env = FrozenLakeGame()
    env.reset(seed=0)
    for turns, actions, per_turn in ((5, 10, 5), (5, 3, 5), (1, 10, 4), (2, 1, 3)):
        plan = env.oracle_turn(turns, actions, per_turn)
        assert 1 <= len(plan) <= min(actions, per_turn) and set(plan) <= set(ACTIONS)
    assert env.oracle_turn(0, 10, 5) == [] and env.oracle_turn(5, 0, 5) == []
    with pytest.raises(ValueError, match="max_actions_per_turn"):
        env.oracle_turn(5, 10, 0)
    set_map(env, ("SFFF", "FFFF", "FFHF", "FFFG"), (3, 3))
    assert env.oracle_turn(5, 10, 5) == [] and env.oracle_value(5, 10, 5) == 1.0


def test_oracle_value_grows_with_budget():
    env = FrozenLakeGame()
    env.reset(seed=9)
    values = [env.oracle_value(t, a, k) for t, a, k in ((1, 1, 1), (2, 2, 1), (5, 10, 2), (5, 10, 5), (10, 20, 5))]
    assert all(x <= y + 1e-12 for x, y in zip(values, values[1:], strict=False))


def test_oracle_beats_random_by_a_wide_margin():
    env = FrozenLakeGame()
    rng = np.random.default_rng(0)

    def random_policy(env, turns_left, actions_left, per_turn):
        return [ACTIONS[i] for i in rng.integers(0, 4, size=min(per_turn, actions_left))]

    seeds = range(200)
    oracle = np.mean([play(env, s, oracle_policy, 5, 2, 10)[0] for s in seeds])
    random = np.mean([play(env, s, random_policy, 5, 2, 10)[0] for s in seeds])
    assert oracle > random + 0.2, (oracle, random)


def test_oracle_through_the_agent_env_matches_the_local_loop():
    import agentgym_bench  # noqa: F401 - registers the ids
    from agentgym_bench.agent import oracle_reply

    game = FrozenLakeGame()
    for seed in range(20):
        agent_env = gym.make("AgentFrozenLake-v0", max_actions_per_turn=2).unwrapped
        agent_env.reset(seed=seed)
        done, info = False, {}
        while not done:
            _, _, done, _, info = agent_env.step(oracle_reply(agent_env))
        assert info["success"] is play(game, seed, oracle_policy, 5, 2, 10)[0]
