"""TextArena single-player games as Gymnasium agent envs: check_env, determinism, untouched caller RNGs."""

import random
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("textarena", reason="TextArena games need the multiagent extra: pip install -e '.[multiagent]'")

import agentgym_bench  # noqa: E402,F401  (registers the ids)
from agentgym_bench.agent import LLMAgentEnv  # noqa: E402
from agentgym_bench.errors import UserError  # noqa: E402
from agentgym_bench.multiagent.registration import agent_id  # noqa: E402
from agentgym_bench.multiagent.textarena_catalog import SINGLE_PLAYER  # noqa: E402
from agentgym_bench.multiagent.textarena_game import NOTHING_YET, TextArenaGame  # noqa: E402

BASE = [g for g in SINGLE_PLAYER if g.endswith("-v0")]  # one id per game in the default suite
VARIANTS = [g for g in SINGLE_PLAYER if g not in BASE]


def rng_states():
    return random.getstate(), np.random.get_state()


def assert_same_rng_states(before):
    (py, (kind, keys, pos, gauss, cached)) = before
    now_py, (now_kind, now_keys, now_pos, now_gauss, now_cached) = rng_states()
    assert now_py == py
    assert (now_kind, now_pos, now_gauss, now_cached) == (kind, pos, gauss, cached)
    assert np.array_equal(now_keys, keys)


@pytest.mark.parametrize("game", BASE)
def test_check_env_on_every_curated_game(game):
    env = gym.make(agent_id(game))
    assert isinstance(env.unwrapped, LLMAgentEnv)
    check_env(env.unwrapped)


@pytest.mark.slow
@pytest.mark.parametrize("game", VARIANTS)
def test_check_env_on_every_curated_variant(game):
    check_env(gym.make(agent_id(game)).unwrapped)


def test_generic_id_takes_any_game_and_ids_are_unique():
    env = gym.make("AgentTextArena-v0", game="Minesweeper-v0")
    assert isinstance(env.unwrapped.game, TextArenaGame)
    assert env.unwrapped.game.game == "Minesweeper-v0"
    assert len({agent_id(g) for g in SINGLE_PLAYER}) == len(SINGLE_PLAYER)
    assert agent_id("Minesweeper-v0-small") == "AgentTextArena/MinesweeperSmall-v0"
    assert agent_id("2048-v0-3x3") == "AgentTextArena/2048_3x3-v0"


def test_textarena_prompt_by_default_and_overridable():
    obs, _ = gym.make("AgentTextArena/TowerOfHanoi-v0").reset(seed=0)
    assert obs.startswith("Write one move a turn inside <answer>...</answer>, as the game's instructions below say. "
                          "The episode stops after 50 moves if the game has not ended by then.\n\nYou are playing "
                          "Tower of Hanoi")
    assert "action separator" not in obs and "moves left" not in obs
    obs, _ = gym.make("AgentTextArena/TowerOfHanoi-v0", prompt="ragen", max_turns=3).reset(seed=0)
    assert "action separator" in obs


def test_a_game_that_shows_only_its_instructions_says_so_on_the_first_turn():
    env = gym.make("AgentTextArena/GuessTheNumber-v0")
    obs, _ = env.reset(seed=0)
    assert obs.endswith(f"Turn 1:\n{NOTHING_YET}\nAlways output: <think> [Your thoughts] </think> "
                        "<answer> [your answer] </answer> with no extra text. "
                        "Max response length: 100 words (tokens).\n")
    assert "within 10 turns" in obs and "moves left" not in obs
    obs, *_ = env.step("<think>halve</think><answer>[10]</answer>")
    assert NOTHING_YET not in obs and "The target number is" in obs


def test_unknown_game_is_a_clear_error():
    with pytest.raises(ValueError, match="not a TextArena id.*Minesweeper-v0"):
        TextArenaGame("Minesweeper-v9")


@pytest.mark.parametrize("game", ["TicTacToe-v0", "ThreePlayerTicTacToe-v0"])
def test_a_game_of_two_or_more_players_is_refused_with_its_pettingzoo_env(game):
    """It crashed on the first reset (TextArena's assert on the number of players)."""
    with pytest.raises(ValueError, match=f"two or more players.*TextArenaAECEnv\\('{game}'\\)"):
        gym.make("AgentTextArena-v0", game=game)


@pytest.mark.parametrize(("game", "move", "reason"), [
    ("Countdown-v0", "[9 9 +]", "Invalid indices"), ("Cryptarithm-v0", "[Z 1]", "Letter Z not in puzzle"),
    ("Slitherlink-v0", "[h 99 99]", "Edge outside board"), ("ThreeCardMonte-v0", "[w]", "Bad action")])
def test_games_that_pass_their_arguments_the_other_way_round_play_by_their_rules(game, move, reason):
    """textarena 0.7.4's Countdown, Cryptarithm, Slitherlink and ThreeCardMonte call ``set_invalid_move(reward,
    reason)`` and echo a move as ``add_observation(player, move, type)``: the bridge mends both, so a move is read,
    the warning names the reason, and a second invalid move ends the game with a number for its reward."""
    env = gym.make(agent_id(game))
    env.reset(seed=1)
    obs, reward, terminated, _, info = env.step(f"<think></think><answer>{move}</answer>")
    assert not terminated and info["invalid_actions"] == [move] and f"Reason: {reason}" in obs
    obs, reward, terminated, _, info = env.step(f"<think></think><answer>{move}</answer>")
    assert terminated and isinstance(reward, float) and info["reason"].startswith(f"Invalid Move: {reason}")


def test_the_generic_id_without_a_game_names_what_it_needs():
    with pytest.raises(UserError, match=r"AgentTextArena-v0 plays the TextArena game named by game=, e.g. "
                                        rf"gym.make\('AgentTextArena-v0', game='{SINGLE_PLAYER[0]}'\)"):
        gym.make("AgentTextArena-v0")


def play(env_id, seed, moves):
    env = gym.make(env_id)
    out = [env.reset(seed=seed)[0]]
    for move in moves:
        obs, reward, terminated, truncated, info = env.step(f"<think></think><answer>{move}</answer>")
        out.append((obs, reward, terminated, info["state_key"], info["executed_actions"]))
        if terminated:
            break
    return out


MOVES_2048 = ["[w]", "[a]", "[s]", "[d]"] * 6


def test_same_seed_same_episode_even_interleaved_with_global_rng_use():
    """2048 draws new tiles from Python's global random inside step: our private RNG copy makes it reproducible."""
    first = play("AgentTextArena/2048-v0", 3, MOVES_2048)
    env_a, env_b = gym.make("AgentTextArena/2048-v0"), gym.make("AgentTextArena/2048-v0")
    obs_a = [env_a.reset(seed=3)[0]]
    env_b.reset(seed=4)
    for move in MOVES_2048:
        random.random()  # the caller uses the global RNG between moves
        np.random.random()
        reply = f"<think></think><answer>{move}</answer>"
        obs, reward, terminated, _, info = env_a.step(reply)
        obs_a.append((obs, reward, terminated, info["state_key"], info["executed_actions"]))
        env_b.step(reply)
        if terminated:
            break
    assert obs_a == first
    assert play("AgentTextArena/2048-v0", 4, MOVES_2048) != first


@pytest.mark.parametrize("game", ["2048-v0", "Minesweeper-v0-small", "Blackjack-v0", "Sokoban-v0"])
def test_caller_rng_states_unchanged_by_a_full_episode(game):
    random.seed(11)
    np.random.seed(12)
    before = rng_states()
    env = gym.make(agent_id(game))
    env.reset(seed=0)
    terminated, turns = False, 0
    while not terminated:
        _, _, terminated, _, _ = env.step("<think></think><answer>[1 1] || [w] || [hit] || [stand]</answer>")
        turns += 1
    env.close()
    assert turns <= 50
    assert_same_rng_states(before)


def test_invalid_move_rule_follows_textarena():
    """First invalid move in a row: refused (no budget used), with TextArena's warning as the observation instead
    of the last move's news again; second in a row: the game ends with its penalty, and says why."""
    env = gym.make("AgentTextArena/MinesweeperSmall-v0")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<think></think><answer>[3 3]</answer>")
    assert info["executed_actions"] == ["[3 3]"] and not terminated and "You revealed the cell at (3, 3)." in obs
    board = info["state_key"]
    obs, reward, terminated, _, info = env.step("<think></think><answer>[3 3]</answer>")
    assert info["invalid_actions"] == ["[3 3]"] and not terminated and info["actions_left"] == 49
    assert "You revealed" not in obs and "Reason: The cell at (3, 3) has already been revealed." in obs
    assert board in obs and info["state_key"] == board and "reason" not in info
    obs, reward, terminated, _, info = env.step("<think></think><answer>[3 3]</answer>")
    assert terminated and not info["success"] and info["invalid_move"] is True
    assert info["reason"] == "Invalid Move: The cell at (3, 3) has already been revealed."
    assert obs.endswith(f"Game over: {info['reason']}\n")


def test_a_won_game_is_a_success():
    env = gym.make("AgentTextArena/TowerOfHanoi-v0")
    env.reset(seed=0)
    moves = ["[A C]", "[A B]", "[C B]", "[A C]", "[B A]", "[B C]", "[A C]"]
    for move in moves:
        _, reward, terminated, _, info = env.step(f"<think></think><answer>{move}</answer>")
    assert terminated and info["success"] and reward == 1.0


def test_fuzzed_replies_never_crash():
    env = gym.make("AgentTextArena/MinesweeperSmall-v0")
    env.reset(seed=0)
    replies = ["", "√é😀" * 1000, "<answer>" * 10_000, "<think><answer>[1 1]</answer></think>",
               "<think></think><answer>" + "x" * (1 << 20) + "</answer>", "<think></think><answer>[９ ９]</answer>"]
    for reply in replies:
        obs, *_ = env.step(reply)
        assert obs in env.observation_space
        env.reset(seed=0)


def test_importing_the_package_does_not_import_textarena():
    code = "import sys, agentgym_bench; assert 'textarena' not in sys.modules and 'pettingzoo' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


THREADED_CHECK = """
import sys
from concurrent.futures import ThreadPoolExecutor
from tests.multiagent.test_textarena_single import MOVES_2048, play

def episode(seed):
    return play("AgentTextArena/2048-v0", seed, MOVES_2048)

sys.setswitchinterval(1e-6)  # switch threads often, so unguarded RNG swaps would interleave (they did)
with ThreadPoolExecutor(4) as pool:
    threaded = list(pool.map(episode, [3, 4, 5, 6] * 2))
sys.setswitchinterval(0.005)
sys.exit(0 if threaded == [episode(s) for s in [3, 4, 5, 6] * 2] else 1)
"""


def test_matches_stepped_from_threads_match_sequential_play():
    """Every swap of the global RNG states (TextArena calls and importing textarena) is serialised by one lock; an
    unguarded import from another thread once restored a match's private state mid-call (1 run in 4 failed). Run in
    a fresh process so that only this check's threads draw from the global ``random``."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", THREADED_CHECK], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
