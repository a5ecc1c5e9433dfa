import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_bench.agent import LLMAgentEnv, format_reply, oracle_reply, random_reply
from tests.agent.toy_game import CounterGame, FreeTextGame


def reply(*actions):
    return format_reply(list(actions))


def make(**kwargs):
    env = LLMAgentEnv(CounterGame(goal=kwargs.pop("goal", 5)), **kwargs)
    return env


def test_first_observation_carries_instructions_actions_budget_and_state():
    env = make()
    obs, info = env.reset(seed=0)
    assert obs.startswith("Reach 5.")
    assert "Your available actions are:\nInc, Dec" in obs
    assert "up to 10 actions" in obs
    assert "Turn 1:\nState:\nvalue " in obs
    assert "You have 10 actions left" in obs
    assert info["system_prompt"] == "You're a helpful assistant. "
    assert info["valid_actions"] == ["Inc", "Dec"]
    assert info["success"] is False
    assert obs in env.observation_space


def test_multi_action_turn_rewards_and_budget():
    env = make(goal=50)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply("Inc", "inc", " INC "))
    assert info["executed_actions"] == ["Inc", "Inc", "Inc"]
    assert info["actions_left"] == 7 and env.actions_left == 7
    assert reward == 0.0 and not terminated and truncated is False
    assert obs.startswith("Reward:\n0\n\nTurn 2:")
    assert "You have 7 actions left" in obs


def test_extra_actions_are_dropped_and_recorded():
    env = make(goal=50, max_actions_per_turn=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step(reply("Inc", "Dec", "Inc", "Inc"))
    assert info["executed_actions"] == ["Inc", "Dec"]
    assert info["dropped_actions"] == ["Inc", "Inc"]
    assert info["actions"] == ["Inc", "Dec", "Inc", "Inc"]


def test_invalid_actions_are_counted_not_executed_and_do_not_use_budget():
    env = make(goal=50)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(reply("Jump", "Inc"))
    assert info["invalid_actions"] == ["Jump"] and info["executed_actions"] == ["Inc"]
    assert info["actions_left"] == 9
    assert reward == 0.0 and info["format_penalty"] == 0.0
    assert info["action_is_valid"] is False and info["format_valid"] is True


@pytest.mark.parametrize("text", ["no tags at all", reply("Jump"), reply(), "<think>x</think><answer>Inc"])
def test_turn_without_valid_action_gets_format_penalty(text):
    env = make(goal=50)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(text)
    assert reward == pytest.approx(-0.1)
    assert info["executed_actions"] == [] and not terminated
    assert info["actions_left"] == 10
    assert (info["format_error"] != "") is (not info["format_valid"])  # says why where the format failed


def test_game_end_mid_turn_drops_the_rest_and_terminates():
    env = make(goal=3)
    env.reset(seed=0)
    start = env.game.value
    need = 3 - start
    _, reward, terminated, truncated, info = env.step(reply(*(["Inc"] * need + ["Dec", "Dec"])))
    assert terminated and truncated is False
    assert info["success"] is True and info["budget_exhausted"] is False
    assert info["executed_actions"] == ["Inc"] * need
    assert info["dropped_actions"] == ["Dec", "Dec"]
    assert reward == 1.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(reply("Inc"))


def test_budget_exhaustion_terminates_without_truncation():
    env = make(goal=50, max_turns=2)
    env.reset(seed=0)
    assert env.step(reply("Inc"))[2] is False
    _, _, terminated, truncated, info = env.step(reply("Inc"))
    assert terminated is True and truncated is False and info["budget_exhausted"] is True

    env = make(goal=50, max_actions_per_episode=3)
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(reply("Inc", "Inc", "Inc", "Inc"))
    assert terminated and info["budget_exhausted"] and info["dropped_actions"] == ["Inc"]


def test_compact_template_is_grid_and_budget_only():
    env = make(prompt="compact")
    obs, info = env.reset(seed=0)
    assert obs == f"value {env.game.value}\nactions left: 10"
    assert info["system_prompt"] == ""
    obs, *_ = env.step(reply("Inc"))
    assert obs == f"value {env.game.value}\nactions left: 9"


def test_think_disabled_accepts_answer_only():
    env = make(goal=50, enable_think=False)
    obs, _ = env.reset(seed=0)
    assert "<answer> [your answer] </answer>" in obs and "<think>" not in obs
    _, _, _, _, info = env.step("<answer>Inc</answer>")
    assert info["executed_actions"] == ["Inc"]


def test_instruction_and_legend_overrides():
    env = make(instructions="Custom rules.", legend="v: value")
    obs, _ = env.reset(seed=0)
    assert obs.startswith("Custom rules.\nThe meaning of each symbol in the state is:\nv: value")


def test_open_text_game_passes_actions_through_and_trusts_game_validity():
    env = LLMAgentEnv(FreeTextGame())
    obs, info = env.reset(seed=0)
    assert "valid_actions" not in info and "the actions listed with each state" in obs
    _, reward, _, _, info = env.step(reply("say[hi]", "shout[hi]"))
    assert info["executed_actions"] == ["say[hi]"] and info["invalid_actions"] == ["shout[hi]"]
    assert reward == 1.0


def test_the_games_own_info_keys_pass_through():
    env = LLMAgentEnv(FreeTextGame())
    env.reset(seed=0)
    _, _, _, _, info = env.step(reply("say[hi]"))
    assert info["said"] == ["hi"] and "action_is_effective" not in info
    _, _, _, _, info = env.step(reply("shout[hi]"))  # refused: the keys of the last accepted move
    assert info["said"] == ["hi"] and info["action_is_valid"] is False
    _, info = make().reset(seed=0)
    assert not {"instructions", "legend"} & set(info) and info["valid_actions"] == ["Inc", "Dec"]


def test_state_key_and_success_come_from_the_game():
    env = make(goal=50)
    _, info = env.reset(seed=0)
    assert info["state_key"] == str(env.game.value)


def test_check_env_passes_on_a_third_party_game():
    check_env(LLMAgentEnv(CounterGame()), skip_render_check=True)


def test_same_seed_same_episode():
    def run(seed):
        env = make(goal=4)
        out = [env.reset(seed=seed)[0]]
        for _ in range(3):
            out.append(env.step(reply("Inc", "Dec", "Inc"))[:3])
            if out[-1][2]:
                break
        return out

    assert run(7) == run(7)


def test_oracle_and_random_replies():
    import numpy as np

    env = make(goal=5)
    env.reset(seed=1)
    obs, reward, terminated, _, info = env.step(oracle_reply(env))
    assert terminated and info["success"]
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    _, _, _, _, info = env.step(random_reply(env, rng, max_actions=3))
    assert 1 <= len(info["executed_actions"]) <= 3


@pytest.mark.parametrize("bad", [{"max_turns": 0}, {"max_actions_per_turn": -1}, {"max_actions_per_episode": 1.5},
                                 {"prompt": "fancy"}])
def test_bad_arguments_name_the_argument(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        make(**bad)


replies = st.one_of(
    st.text(),
    st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "||", "Inc", "Dec", " ", "é",
                              "\x00", "🙂", "\n"]), max_size=30).map("".join),
    st.lists(st.sampled_from(["Inc", "Dec", "inc", "", "Jump", "√", "Inc\x1b[0m"]), max_size=12).map(
        lambda xs: format_reply(xs)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(replies, min_size=1, max_size=6), st.integers(0, 2**31))
def test_fuzzed_replies_never_raise_and_observations_stay_in_space(texts, seed):
    env = make(goal=4)
    obs, _ = env.reset(seed=seed)
    assert obs in env.observation_space
    for text in texts:
        obs, reward, terminated, truncated, info = env.step(text)
        assert obs in env.observation_space
        assert isinstance(reward, float) and truncated is False
        if terminated:
            break


def test_huge_reply_is_an_invalid_turn():
    env = make(goal=50)
    env.reset(seed=0)
    obs, reward, *_ = env.step("<think>" + "x" * (1 << 20) + "</think><answer>" + "Inc||" * 1000)
    assert reward == pytest.approx(-0.1) and obs in env.observation_space


def test_oracle_and_random_replies_accept_envs_from_gym_make():
    import gymnasium as gym
    import numpy as np

    import agentgym_bench  # noqa: F401  (registers the ids)

    env = gym.make("AgentSokoban-v0")
    assert not isinstance(env, LLMAgentEnv)  # wrapped by gym.make
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(oracle_reply(env))
    assert info["executed_actions"] and not info["invalid_actions"]
    if not terminated:
        _, _, _, _, info = env.step(random_reply(env, np.random.default_rng(0)))
        assert info["format_valid"]
    with pytest.raises(TypeError, match="agent env"):
        oracle_reply(gym.make("agentgym/Sokoban-v0"))
