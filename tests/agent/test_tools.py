"""Tool calls as an action format: the Hermes/Qwen text parsed like <answer> tags (bad format and invalid actions
alike), the env's tool, and the Qwen3 chat template's own rendering of a call read back by the parser."""

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_bench.agent import oracle_reply, random_reply
from agentgym_bench.agent.tools import (
    ACTION_TOOL,
    action_tool,
    format_tool_reply,
    parse_tool_reply,
    reply_text,
    split_tool_calls,
    tool_call_text,
)
from tests.rollout.test_tokens import with_template


def call(actions, name=ACTION_TOOL):
    return tool_call_text(name, {"actions": actions})


@pytest.mark.parametrize(("reply", "think", "ok", "actions"), [
    (call(["Up", "Left"]), False, True, ["Up", "Left"]),
    ("I will go up.\n" + call([" Up "]) + "\n" + call(["Left", ""]), False, True, ["Up", "Left"]),  # parallel calls
    ('<tool_call>{"name": "take_actions", "arguments": "{\\"actions\\": [\\"Up\\"]}"}</tool_call>', False, True,
     ["Up"]),  # arguments as a JSON string
    ("<think>go</think>\n\n" + call(["Down"]), True, True, ["Down"]),
    (call(["Down"]), True, False, []),  # thinking required
    ("<think>go</think> text " + call(["Down"]), True, False, []),
    ("no call at all", False, False, []),
    ("<answer>Up</answer>", False, False, []),
    (call(["Up"]).removesuffix("</tool_call>"), False, False, []),  # unclosed
    ("<tool_call>not json</tool_call>", False, False, []),
    (call(["Up"], name="move"), False, False, []),
    (tool_call_text(ACTION_TOOL, {"action": "Up"}), False, False, []),
    (tool_call_text(ACTION_TOOL, {"actions": "Up"}), False, False, []),
    (tool_call_text(ACTION_TOOL, {"actions": ["Up", 3]}), False, False, []),
    (tool_call_text(ACTION_TOOL, ["Up"]), False, False, []),
    (call(["Up"]) + "<tool_call>[]</tool_call>", False, False, []),  # one bad call spoils the reply
    (call([]), False, True, []),
])
def test_parse_table(reply, think, ok, actions):
    parsed = parse_tool_reply(reply, enable_think=think)
    assert (parsed.format_ok, parsed.actions) == (ok, actions)
    assert bool(parsed.problem) is not ok  # a failure says why, a success says nothing


@pytest.mark.parametrize(("reply", "think", "problem"), [
    (call(["Down"]), True, "no <think>...</think> block before the answer"),
    ("<think>go</think> text " + call(["Down"]), True, "<tool_call> does not follow </think> directly"),
    ("no call at all", False, "no <tool_call>...</tool_call> block"),
    (call(["Up"], name="move"), False, "a tool call is not take_actions with an 'actions' list of strings"),
])
def test_a_format_failure_says_what_the_reply_lacked(reply, think, problem):
    assert parse_tool_reply(reply, enable_think=think).problem.startswith(problem)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('<>/{}[]":, tool_call take_actions arguments actions Up\n\\')),
               max_size=200))
def test_parser_never_raises(text):
    parse_tool_reply(text, enable_think=False)
    parse_tool_reply(text, enable_think=True)
    split_tool_calls(text)


def test_format_and_openai_round_trip():
    reply = format_tool_reply(["Up", "Left"], think="plan")
    assert parse_tool_reply(reply).actions == ["Up", "Left"]
    content, calls = split_tool_calls(reply)
    assert content == "<think>plan</think>" and calls == [(ACTION_TOOL, {"actions": ["Up", "Left"]})]
    structured = [{"id": "call_0", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(arguments)}} for name, arguments in calls]
    assert reply_text(content, structured) == reply
    assert not parse_tool_reply(reply_text(None, [{"function": {"name": ACTION_TOOL, "arguments": "{bad"}}]),
                                enable_think=False).format_ok


def test_tool_format_env_offers_the_tool_and_keeps_answer_semantics():
    env = gym.make("AgentSokoban-v0", action_format="tool")
    obs, info = env.reset(seed=0)
    assert info["tools"] == env.unwrapped.tools
    function = info["tools"][0]["function"]
    assert function["name"] == ACTION_TOOL and function["parameters"]["required"] == ["actions"]
    assert function["parameters"]["properties"]["actions"]["items"]["enum"] == info["valid_actions"]
    assert "take_actions" in obs and " || " not in obs
    _, reward, _, _, info = env.step("<think>x</think><answer>Up</answer>")  # tags are bad format here
    assert not info["format_valid"] and reward == pytest.approx(-0.1) and info["executed_actions"] == []
    _, reward, _, _, info = env.step("<think>x</think>" + call(["Jump", "Up"]))
    assert info["format_valid"] and info["invalid_actions"] == ["Jump"] and info["actions"] == ["Jump", "Up"]


def test_tool_format_plays_the_same_episode_as_answer_tags():
    def play(action_format):
        env = gym.make("AgentSokoban-v0", action_format=action_format)
        env.reset(seed=7)
        rewards, done = [], False
        while not done:
            _, reward, done, _, info = env.step(oracle_reply(env))
            rewards.append(reward)
        return rewards, info["success"]

    assert play("tool") == play("answer")
    env = gym.make("AgentFrozenLake-v0", action_format="tool", enable_think=False)
    env.reset(seed=1)
    assert parse_tool_reply(random_reply(env, np.random.default_rng(0)), enable_think=False).format_ok


def test_open_text_games_get_free_string_actions():
    items = action_tool(None, 1)["function"]["parameters"]["properties"]["actions"]["items"]
    assert items == {"type": "string"}


def test_default_stays_answer_tags_and_a_bad_format_name_is_refused():
    obs, info = gym.make("AgentSokoban-v0").reset(seed=0)
    assert "tools" not in info and 'separated by the action separator " || "' in obs and "<answer>" in obs
    with pytest.raises(ValueError, match="action_format"):
        gym.make("AgentSokoban-v0", action_format="json")


def test_check_env_passes_in_tool_format():
    check_env(gym.make("AgentFrozenLake-v0", action_format="tool").unwrapped, skip_render_check=True)


def test_qwen3_template_lists_the_tool_and_its_own_call_text_parses(model_and_tokenizer):
    tokenizer = with_template(model_and_tokenizer[1], "qwen3")
    env = gym.make("AgentSokoban-v0", action_format="tool")
    obs, info = env.reset(seed=0)
    messages = [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": obs}]
    prompt = tokenizer.apply_chat_template(messages, tools=env.unwrapped.tools, add_generation_prompt=True,
                                           tokenize=False)
    assert "<tools>\n" + json.dumps(info["tools"][0]) in prompt and "<tool_call>" in prompt
    assistant = {"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function": {"name": ACTION_TOOL,
                                                                  "arguments": {"actions": ["Up", "Left"]}}}]}
    rendered = tokenizer.apply_chat_template(messages + [assistant], tools=env.unwrapped.tools, tokenize=False)
    reply = rendered[len(prompt):].removesuffix("<|im_end|>\n")
    assert reply == "<think>\n\n</think>\n\n" + call(["Up", "Left"])  # the template's text is ours, byte for byte
    assert parse_tool_reply(reply).actions == ["Up", "Left"]
