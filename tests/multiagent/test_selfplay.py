"""Matches between policies: batched turns, one seat's trajectories, rewards on the right turn, scores."""

import re

import pytest

pytest.importorskip("pettingzoo", reason="PettingZoo envs need the multiagent extra: pip install -e '.[multiagent]'")

from agentgym_bench.agent.parsing import format_reply  # noqa: E402
from agentgym_bench.multiagent.selfplay import (  # noqa: E402
    MatchResult,
    RandomBargainPolicy,
    ScriptedBargainPolicy,
    make_multiagent_env,
    play_matches,
    score,
)
from agentgym_bench.rollout.policy import Generation  # noqa: E402
from agentgym_bench.rollout.trajectory import Trajectory  # noqa: E402


class Counting:
    """A policy that records how it was called, around a real one."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []

    def generate(self, conversations, envs=None):
        self.calls.append(len(conversations))
        return self.policy.generate(conversations, envs)


def test_scripted_beats_random_with_separated_intervals():
    results = play_matches("Bargain-v0", range(200), ScriptedBargainPolicy(), RandomBargainPolicy(0))
    stats = score(results)
    assert stats["matches"] == 200 and stats["wins"] + stats["draws"] + stats["losses"] == 200
    assert stats["win_ci"][0] > stats["loss_ci"][1]
    assert {r.learner for r in results} == {"player_0", "player_1"}  # seats alternate


def test_learner_trajectory_holds_its_turns_and_the_final_reward_on_the_last_turn():
    results = play_matches("Bargain-v0", [7] * 4, RandomBargainPolicy(1), ScriptedBargainPolicy(), group_size=2)
    for i, result in enumerate(results):
        trajectory = result.learner_trajectory
        assert isinstance(trajectory, Trajectory) and trajectory.group == i // 2 and trajectory.seed == 7
        assert trajectory.turns and all(t.reward == 0.0 for t in trajectory.turns[:-1])
        assert trajectory.turns[-1].reward == result.rewards[result.learner] == trajectory.episode_reward
        assert trajectory.turns[0].observation.startswith("Bargain:")
        assert trajectory.turns[0].state_key.startswith("round=0")
        messages = trajectory.messages(len(trajectory.turns) - 1)
        assert [m["role"] for m in messages] == ["user", "assistant"] * (len(trajectory.turns) - 1) + ["user"]
        assert Trajectory.from_dict(trajectory.to_dict()).to_dict() == trajectory.to_dict()


def test_self_play_is_one_batched_call_per_tick_and_deterministic():
    policy = Counting(RandomBargainPolicy(3))
    first = play_matches("Bargain-v0", range(8), policy, policy)
    assert policy.calls[0] == 8  # learners (even matches) and opponents (odd matches) in one call
    learner, opponent = Counting(RandomBargainPolicy(3)), Counting(RandomBargainPolicy(4))
    play_matches("Bargain-v0", range(8), learner, opponent)
    assert learner.calls[0] == opponent.calls[0] == 4  # a call per policy

    def replies(results):
        return [[t.reply for t in r.learner_trajectory.turns] for r in results]

    second_policy = RandomBargainPolicy(3)
    second = play_matches("Bargain-v0", range(8), second_policy, second_policy)
    assert replies(first) == replies(second) and [r.rewards for r in first] == [r.rewards for r in second]


class FirstFreeCell:
    """A TicTacToe player that reads the board text and takes the first available move (a real text policy)."""

    def generate(self, conversations, envs=None):
        replies = []
        for messages in conversations:
            moves = re.findall(r"'\[(\d)\]'", messages[-1]["content"])
            history = [m["content"] for m in messages if m["role"] == "user"]
            moves = moves or re.findall(r"'\[(\d)\]'", "".join(history))
            replies.append(Generation(format_reply([f"[{moves[0]}]"] if moves else [])))
        return replies


def test_textarena_matches_through_the_same_loop():
    pytest.importorskip("textarena", reason="TextArena games need the multiagent extra")
    results = play_matches("TextArena/TicTacToe-v0", range(4), FirstFreeCell(), FirstFreeCell())
    for result in results:
        assert sorted(result.rewards.values()) in ([-1.0, 1.0], [0.0, 0.0])
        assert result.learner_trajectory.turns
    assert score(results)["matches"] == 4


def test_score_counts_and_wilson_intervals():
    def fake(outcome):
        return MatchResult(0, "player_0", {}, {"player_0": {"win": 1.0, "draw": 0.0, "loss": -1.0}[outcome],
                                                "player_1": 0.0}, outcome, False)

    stats = score([fake("win")] * 3 + [fake("loss")])
    assert (stats["wins"], stats["draws"], stats["losses"]) == (3, 0, 1)
    assert stats["win_rate"] == 0.75 and stats["mean_reward"] == 0.5
    low, high = stats["win_ci"]
    assert 0.30 < low < 0.31 and 0.95 < high < 0.96  # Wilson 95% for 3/4: (0.301, 0.954)


def test_unknown_env_and_bad_seats_are_clear_errors():
    with pytest.raises(ValueError, match="not a multi-agent env"):
        make_multiagent_env("Chess-v0")
    with pytest.raises(ValueError, match="learner seat 'player_2'"):
        play_matches("Bargain-v0", [0], RandomBargainPolicy(), RandomBargainPolicy(), learner_seats="player_2")
    with pytest.raises(ValueError, match="reads the game"):
        ScriptedBargainPolicy().generate([[{"role": "user", "content": "hi"}]])


def test_the_default_model_plays_a_seat_and_its_tokens_are_recorded(tmp_path):
    """The real generation path: the locally built default model (untrained) against the scripted bargainer."""
    torch = pytest.importorskip("torch")
    from agentgym_bench.rollout.hf import HFPolicy, load_model
    from trainers.sft.default_model import build_default_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, tokenizer = load_model(build_default_model(tmp_path / "model", seed=0))
        policy = HFPolicy(model, tokenizer, max_new_tokens=8, seed=0)
        results = play_matches("Bargain-v0", range(4), policy, ScriptedBargainPolicy(), history=0)
    finally:
        torch.set_num_threads(threads)
    for result in results:
        for turn in result.learner_trajectory.turns:
            assert turn.token_ids and len(turn.token_ids) == len(turn.logprobs) <= 8
        assert result.trajectories["player_1" if result.learner == "player_0" else "player_0"].turns
    assert score(results)["matches"] == 4


class Babbler:
    """Replies without any <answer>: every move is invalid."""

    def generate(self, conversations, envs=None):
        return [Generation("I think I will play the centre.") for _ in conversations]


def test_a_learner_that_never_moved_still_gets_its_win():
    pytest.importorskip("textarena", reason="TextArena games need the multiagent extra")
    (result,) = play_matches("TextArena/TicTacToe-v0", [0], FirstFreeCell(), Babbler(), learner_seats="player_1")
    assert result.learner_trajectory.turns == []  # player_0 lost by two invalid moves before player_1's turn
    assert result.rewards == {"player_0": -1.0, "player_1": 1.0} and result.outcome == "win"
    assert result.trajectories["player_0"].episode_reward == -1.0


def test_progress_lines_say_which_round_the_matches_are_in(monkeypatch, capsys):
    """Matches run in lockstep, so the finished count stays at 0 until the last round: the lines say the round."""
    import functools

    from agentgym_bench import progress
    from agentgym_bench.multiagent import selfplay

    monkeypatch.setattr(selfplay, "progress_bar", functools.partial(progress.progress, interval=0.0))
    policy = RandomBargainPolicy(3)
    play_matches("Bargain-v0", range(4), policy, policy, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("matches: 0/4 matches") and ", round 1, 4 playing" in line for line in lines), lines
    assert lines[-1].startswith("matches: 4/4 matches (100%)")


def test_the_documented_table_is_what_its_command_gives(capsys):
    """A multi-agent walkthrough of 2026-12-02 found docs/multiagent.md's table of 2026-11-22 (before deals were split
    by content) no longer what its command printed. Its first and last rows, read from the page."""
    from pathlib import Path

    from agentgym_bench.multiagent.selfplay import main

    page = (Path(__file__).resolve().parents[2] / "docs" / "multiagent.md").read_text()
    for learner, opponent, row_name in (("scripted", "random", "random"), ("random", "self", "itself")):
        row = re.search(rf"^\| {learner} \| {row_name} \| ([\d.]+) \[([\d.]+), ([\d.]+)\] \| ([\d.]+) \| .* "
                        r"\| ([\d.]+) \|$", page, re.M)
        assert row is not None, (learner, opponent)
        stats = main(["--learner", learner, "--opponent", opponent, "--matches", "400"])
        capsys.readouterr()
        got = (stats["win_rate"], *stats["win_ci"], stats["draw_rate"], stats["mean_reward"])
        assert [f"{x:.3f}" for x in got] == list(row.groups()), (learner, opponent)


@pytest.mark.parametrize(("argv", "message"), [
    (["--opponent", "no-such-model", "--matches", "4"], "no model 'no-such-model'"),
    (["--matches", "0"], "'0' is not a number of matches"),
])
def test_the_command_line_refuses_bad_input_in_one_line(argv, message, capsys):
    from agentgym_bench.multiagent.selfplay import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err
