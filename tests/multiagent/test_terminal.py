"""A person in one seat of a two-player env (`agentgym-bench play Bargain-v1`), through the matches' own engine."""

import pytest

from agentgym_bench.errors import UserError
from agentgym_bench.multiagent.terminal import as_reply, play_in_terminal


def typed(*lines: str):
    """``input`` replaced by the lines a person types, in order (EOFError after the last, as Ctrl-D)."""
    queue = list(lines)

    def read(prompt: str) -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)
    return read


def test_a_bare_move_is_written_as_the_seat_s_reply_and_a_whole_reply_is_kept():
    assert as_reply(" 1 0 2 ", enable_think=True) == "<think></think><answer>1 0 2</answer>"
    assert as_reply("1 0 2", enable_think=False) == "<answer>1 0 2</answer>"
    assert as_reply("<answer>[4]</answer>", enable_think=True) == "<answer>[4]</answer>"


def test_a_person_plays_bargain_against_the_scripted_bargainer_and_reads_the_deal():
    shown = []
    result = play_in_terminal("Bargain-v0", None, "player_0", 3, read=typed("0 0 0"), write=shown.append)
    turn = result.trajectories["player_0"].turns[0]
    assert turn.reply == "<think></think><answer>0 0 0</answer>" and turn.info["format_valid"]
    assert shown[0].startswith("You play player_0 of Bargain-v0 (seed 3) against scripted")
    assert "Your values:" in shown[1]  # the seat's first prompt: what a model in that seat reads
    assert "deal" in result.trajectories["player_0"].final_observation
    assert result.outcome == "loss" and result.rewards["player_0"] == 0.0
    assert shown[-1].startswith("You lose: player_0 (you) +0.00")


def test_an_unreadable_reply_is_said_to_be_no_move_and_the_game_goes_on_as_for_a_model():
    shown = []
    with pytest.raises(EOFError):  # input ends on the third turn
        play_in_terminal("Bargain-v0", "random", "player_1", 0, read=typed("<answer>1 0 2", "everything please"),
                         write=shown.append)
    assert any(line.startswith("(no move read: no <think>") for line in shown)  # kept as typed: it has a tag
    turns = [line for line in shown if "--- your turn (player_1) ---" in line]
    assert len(turns) == 3 and "Round 1: you asked for nothing readable" in turns[1]
    assert "Round 2: you asked for nothing readable" in turns[2]  # a bare line the game cannot read as a demand


@pytest.mark.parametrize("env_id, opponent, seat, words", [
    ("TextArena/TicTacToe-v0", None, "player_0", "needs --opponent"),
    ("TextArena/TicTacToe-v0", "scripted", "player_0", "plays Bargain only"),
    ("TextArena/Minesweeper-v0", "random", "player_0", "single-player TextArena game"),
    ("Bargain-v0", "scripted", "player_2", "not a seat of Bargain-v0: player_0, player_1"),
])
def test_what_cannot_be_played_is_refused_before_any_move(env_id, opponent, seat, words):
    with pytest.raises(UserError, match=words):
        play_in_terminal(env_id, opponent, seat, 0, read=typed(), write=lambda text: None)


def test_on_bargain_v1_the_person_is_told_the_deal_again_each_round():
    shown = []
    with pytest.raises(EOFError):
        play_in_terminal("Bargain-v1", "random", "player_0", 3, read=typed("2 3 3"), write=shown.append)
    second = [line for line in shown if "--- your turn (player_0) ---" in line][1]
    assert "Pool: 2 books, 3 hats, 3 balls. Your values: book 2, hat 0, ball 2." in second
