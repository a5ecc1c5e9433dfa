"""Progress rewards (``train_reward: progress``) against rooms read from the env itself, step by step."""

import gymnasium as gym
import pytest

from agentgym_bench.envs.sokoban.solver import solve
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.scripted import NoisyOraclePolicy, OraclePolicy
from tests.trainers.conftest import tiny_config_dict
from trainers.rl.config import ConfigError, config_from_dict
from trainers.rl.samples import success_rewards
from trainers.rl.shaping import progress_rewards


def env_distances(trajectory) -> list[int]:
    """Shortest-solution lengths (10 if none within 10) of the room at the start and after every turn, read from a
    fresh env stepped with the recorded replies: another path than the rules' replay of the module under test."""
    env = gym.make(trajectory.env_id, **trajectory.env_kwargs)
    env.reset(seed=trajectory.seed)
    rooms = [env.unwrapped.game.room]
    for turn in trajectory.turns:
        env.step(turn.reply)
        rooms.append(env.unwrapped.game.room)
    env.close()
    return [10 if (s := solve(room, max_depth=10)) is None else len(s) for room in rooms]


@pytest.mark.parametrize("env_id", ["AgentSokoban-v0", "AgentSokobanLarge-v0"])
def test_each_turn_earns_its_change_in_distance_on_top_of_the_success_rewards(env_id):
    played = EnvGroups([env_id], [4], 4, seed=10_000).rollout(NoisyOraclePolicy(0.4, seed=2))
    shaped = progress_rewards(played, 0.5)
    moved = 0
    for before, after in zip(played, shaped, strict=True):
        base = success_rewards(before)
        distances = env_distances(before)
        for k, (plain, turn) in enumerate(zip(base.turns, after.turns, strict=True)):
            assert turn.reward == pytest.approx(plain.reward + 0.5 * (distances[k] - distances[k + 1]) / 10)
            assert turn.reply == plain.reply and turn.info == plain.info
            moved += distances[k] != distances[k + 1]
        assert after.success == before.success
        # the shaping telescopes: won episodes end at distance 0
        assert after.episode_reward == pytest.approx(base.episode_reward + 0.5 * (distances[0] - distances[-1]) / 10)
        if before.success:
            assert distances[-1] == 0
    assert moved > 0
    assert any(t.success for t in played) and not all(t.success for t in played)
    # lost episodes of one group differ where success alone gives them all 0
    lost = {t.episode_reward for t in shaped if not t.success}
    assert len(lost) > 1


def test_the_oracle_earns_its_whole_distance_and_other_envs_keep_the_success_rewards():
    played = EnvGroups(["AgentSokobanLarge-v0", "AgentFrozenLake-v0", "AgentBandit-v0"], [2, 2, 1], 2,
                       seed=10_000).rollout(OraclePolicy())
    shaped = progress_rewards(played, 1.0)
    for before, after in zip(played, shaped, strict=True):
        if before.env_id == "AgentSokobanLarge-v0":
            assert before.success
            assert after.episode_reward == pytest.approx(1.0 + env_distances(before)[0] / 10)
        else:
            assert [u.reward for u in after.turns] == [u.reward for u in success_rewards(before).turns]


def test_progress_is_a_train_reward_and_its_weight_cannot_be_negative(tiny_model, tmp_path):
    config = config_from_dict({**tiny_config_dict(tiny_model, tmp_path, "gigpo"), "train_reward": "progress"})
    assert config.progress_weight == 0.5
    with pytest.raises(ConfigError, match="progress_weight"):
        config_from_dict({**tiny_config_dict(tiny_model, tmp_path, "gigpo"), "train_reward": "progress",
                          "progress_weight": -1.0})
    with pytest.raises(ConfigError, match="train_reward"):
        config_from_dict({**tiny_config_dict(tiny_model, tmp_path, "gigpo"), "train_reward": "distance"})
