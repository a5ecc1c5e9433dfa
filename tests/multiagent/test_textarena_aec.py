"""Two-player TextArena games as PettingZoo AEC envs: api_test, determinism, invalid moves, fuzzed replies."""

import random
import warnings

import numpy as np
import pytest

pytest.importorskip("textarena", reason="TextArena games need the multiagent extra: pip install -e '.[multiagent]'")
pytest.importorskip("pettingzoo", reason="PettingZoo envs need the multiagent extra: pip install -e '.[multiagent]'")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from agentgym_bench.multiagent.textarena_aec import TextArenaAECEnv  # noqa: E402
from agentgym_bench.multiagent.textarena_catalog import LEFT_OUT, TWO_PLAYER  # noqa: E402


@pytest.mark.parametrize("game", TWO_PLAYER)
def test_api_test_on_every_curated_game(game):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo warns about non-Box spaces and non-numpy observations
        api_test(TextArenaAECEnv(game), num_cycles=200)


@pytest.mark.parametrize("game", ["TicTacToe-v0", "KuhnPoker-v0", "IteratedPrisonersDilemma-v0"])
def test_pettingzoo_seed_test(game):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(lambda: TextArenaAECEnv(game), num_cycles=50)


def test_curated_and_left_out_do_not_overlap():
    assert not set(TWO_PLAYER) & set(LEFT_OUT)


def play(game, seed, replies, *, env=None):
    """Play ``replies`` (a list per agent, used in turn); return every ``last()`` seen."""
    env = env or TextArenaAECEnv(game)
    env.reset(seed=seed)
    queues = {a: list(r) for a, r in replies.items()}
    seen = []
    for agent in env.agent_iter(100):
        obs, reward, terminated, truncated, info = env.last()
        seen.append((agent, obs["text"], reward, terminated, truncated, sorted(info.items())))
        if terminated or truncated:
            env.step(None)
        else:
            env.step(queues[agent].pop(0) if queues[agent] else "no move")
    return seen


def answer(move):
    return f"<think>...</think><answer>{move}</answer>"


TICTACTOE = {"player_0": [answer("[4]"), answer("[0]"), answer("[8]")], "player_1": [answer("[1]"), answer("[2]")]}


def test_a_won_game_pays_plus_one_and_minus_one():
    seen = play("TicTacToe-v0", 0, TICTACTOE)
    final = {agent: (reward, dict(info)) for agent, _, reward, terminated, _, info in seen if terminated}
    assert final["player_0"][0] == 1.0 and final["player_0"][1]["outcome"] == "win"
    assert final["player_1"][0] == -1.0 and final["player_1"][1]["outcome"] == "loss"


def test_unreadable_reply_is_an_invalid_move_by_the_game_rule():
    """TextArena's rule: a warning and a retry, then a second invalid move in a row loses."""
    env = TextArenaAECEnv("TicTacToe-v0")
    env.reset(seed=0)
    board = env.infos["player_0"]["state_key"]
    env.step("I place my mark in the centre")  # no <think> and no <answer>: invalid
    assert env.agent_selection == "player_0" and env.infos["player_0"]["refused"]
    text = env.observe("player_0")["text"]
    assert "attempted an invalid move. Reason: the reply holds no move: no <think>...</think> block" in text
    assert board.startswith("Current Board:") and board in text and env.infos["player_0"]["state_key"] == board
    env.reset(seed=0)
    env.step("<think>centre</think>I place my mark in the centre")
    text = env.observe("player_0")["text"]
    assert "Reason: the reply holds no move: <answer> does not follow </think> directly." in text
    env.reset(seed=0)
    env.step("I place my mark in the centre")
    env.step(answer("[4] || [5]"))  # one move a turn: [5] is dropped
    assert env.infos["player_0"]["dropped_actions"] == ["[5]"] and env.agent_selection == "player_1"
    env.step("<answer>[1]</answer>")  # thinking required: invalid
    env.step(answer("[4]"))  # taken cell: invalid by TextArena, second in a row
    assert env.terminations == {"player_0": True, "player_1": True}
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


def test_same_seed_same_game_and_caller_rng_untouched():
    random.seed(1)
    np.random.seed(2)
    py, npy = random.getstate(), np.random.get_state()
    replies = {"player_0": [answer(f"[{i}]") for i in range(6)], "player_1": [answer(f"[{i}]") for i in range(6)]}
    a = play("KuhnPoker-v0", 5, {"player_0": [answer("[bet]")] * 10, "player_1": [answer("[call]")] * 10})
    b = play("KuhnPoker-v0", 5, {"player_0": [answer("[bet]")] * 10, "player_1": [answer("[call]")] * 10})
    c = play("KuhnPoker-v0", 6, {"player_0": [answer("[bet]")] * 10, "player_1": [answer("[call]")] * 10})
    assert a == b and a != c
    assert play("TicTacToe-v0", 1, replies) == play("TicTacToe-v0", 1, replies)
    assert random.getstate() == py and np.array_equal(np.random.get_state()[1], npy[1])


@pytest.mark.parametrize("game", ["KuhnPoker-v0", "Stratego-v0"])
def test_a_reused_env_deals_the_seeds_match_as_a_fresh_one_does(game):
    """KuhnPoker shuffles its deck in place and Stratego's second reset of one instance never returned: the bridge
    makes a fresh game per reset, so a seed's match is the same on a reused env."""
    replies = {"player_0": [answer("[bet]")] * 10, "player_1": [answer("[call]")] * 10}
    env = TextArenaAECEnv(game)
    first = play(game, 3, replies, env=env)
    play(game, 4, replies, env=env)
    assert play(game, 3, replies, env=env) == first == play(game, 3, replies)


FUZZ = ["", "é😀√" * 5000, "<answer>" * 20_000, "<think><answer>[4]</answer></think>", None, 42, b"[4]",
        "<think></think><answer>" + "[4]" * 300_000 + "</answer>", "<think></think><answer>\x00\x1b[31m</answer>",
        "<think></think><answer><answer>[4]</answer></answer>"]


@pytest.mark.parametrize("game", ["TicTacToe-v0", "IteratedPrisonersDilemma-v0", "Battleship-v0"])
def test_fuzzed_replies_never_crash(game):
    env = TextArenaAECEnv(game)
    env.reset(seed=0)
    for reply in FUZZ * 3:
        if not env.agents:
            env.reset(seed=1)
        agent = env.agent_selection
        env.step(None if env.terminations[agent] or env.truncations[agent] else reply)
        for a in env.agents:
            assert env.observe(a) in env.observation_space(a)
