"""Tool calls end to end, no mocks: a tiny model taught one tool call (the default model with Qwen3's chat
template), served by ``serve`` on loopback, read by the official ``openai`` SDK (``tool_calls``, streamed too) and by
the ``openai:`` backend, whose reply the tool-format env executes; the HF backend passes the env's tools to the
template."""

import copy
import json

import gymnasium as gym
import pytest
import torch

from agentgym_bench.agent.tools import ACTION_TOOL, format_tool_reply
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.openai_compat import OpenAIPolicy
from agentgym_bench.rollout.tokens import step_token_views
from agentgym_bench.serving.chat import ChatServer
from tests.rollout.test_tokens import with_template

openai = pytest.importorskip("openai", reason="the dev extra installs the official client")

ENV_KWARGS = {"action_format": "tool", "prompt": "compact", "enable_think": False}
SEED = 0
REPLY = format_tool_reply(["Up", "Left"], enable_think=False)


def first_turn():
    env = gym.make("AgentFrozenLake-v0", **ENV_KWARGS)
    obs, info = env.reset(seed=SEED)
    return env, [{"role": "user", "content": obs}], info["tools"]


@pytest.fixture(scope="module")
def taught(model_and_tokenizer):
    """A copy of the default model with Qwen3's template (and the words ``tool``, ``arguments``) that answers the
    first FrozenLake turn, tools offered, with :data:`REPLY`: about 100 Adam steps of memorisation on one example."""
    model, tokenizer = model_and_tokenizer
    tokenizer = with_template(tokenizer, "qwen3")
    tokenizer.add_tokens(["tool", "arguments"])
    with torch.random.fork_rng():  # resizing draws the new rows; the global RNG is left as it was
        torch.manual_seed(0)
        model = type(model)(copy.deepcopy(model.config))  # resizing changes the config: never the shared model's
        model.load_state_dict(model_and_tokenizer[0].state_dict())
        model.resize_token_embeddings(len(tokenizer))
    _, messages, tools = first_turn()
    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    reply_ids = tokenizer(REPLY + "<|im_end|>", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + reply_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(300):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.03:
            break
    model.eval()
    return model, tokenizer


@pytest.fixture(scope="module")
def server(taught):
    with ChatServer(*taught, model_name="tiny") as s:
        yield s


def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=60, max_retries=0)


def test_serve_answers_tool_calls_to_the_sdk(server):
    _, messages, tools = first_turn()
    answer = client(server).chat.completions.create(model="tiny", messages=messages, tools=tools, temperature=0,
                                                    max_tokens=64)
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == ACTION_TOOL
    assert json.loads(call.function.arguments) == {"actions": ["Up", "Left"]}


def test_serve_streams_tool_calls_that_the_sdk_accumulates(server):
    _, messages, tools = first_turn()
    chunks = list(client(server).chat.completions.create(model="tiny", messages=messages, tools=tools,
                                                         temperature=0, max_tokens=64, stream=True))
    calls = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (ACTION_TOOL, {"actions": ["Up", "Left"]})]
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["tool_calls"]


def test_tool_choice_none_leaves_text_and_required_forces_a_call(server):
    """``"none"``: text; ``"required"`` (issue 62: honoured, no longer a 400): one call of the offered function, which
    the taught model fills with the env's actions; a forced choice without tools is a 400 naming it."""
    _, messages, tools = first_turn()
    sdk = client(server)
    text = sdk.chat.completions.create(model="tiny", messages=messages, tools=tools, tool_choice="none",
                                       temperature=0, max_tokens=64).choices[0]
    assert text.message.tool_calls is None and text.finish_reason == "stop"
    forced = sdk.chat.completions.create(model="tiny", messages=messages, tools=tools, tool_choice="required",
                                         temperature=0, max_tokens=64).choices[0]
    assert [call.function.name for call in forced.message.tool_calls] == [ACTION_TOOL]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="tiny", messages=messages, tool_choice="required")
    assert caught.value.body["param"] == "tool_choice"
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="tiny", messages=messages, tools=[{"type": "function"}])
    assert caught.value.body["param"] == "tools"


def test_serve_takes_earlier_tool_calls_and_tool_results_as_the_sdk_sends_them(server):
    _, messages, tools = first_turn()
    history = messages + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": ACTION_TOOL, "arguments": '{"actions": ["Up"]}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "moved up"},
    ]
    answer = client(server).chat.completions.create(model="tiny", messages=history, tools=tools, max_tokens=4)
    assert answer.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_openai_backend_sends_the_env_tools_and_the_env_executes_the_call(server):
    env, messages, _ = first_turn()
    policy = OpenAIPolicy(server.base_url, "tiny", temperature=0.0, max_tokens=64)
    (generation,) = policy.generate([messages], [env.unwrapped])
    assert generation.text == REPLY
    _, _, _, _, info = env.step(generation.text)
    assert info["format_valid"] and info["actions"] == ["Up", "Left"] and info["invalid_actions"] == []


def test_hf_backend_renders_the_env_tools_into_the_template(taught):
    env, messages, _ = first_turn()
    (generation,) = HFPolicy(*taught, temperature=0.0, max_new_tokens=64).generate([messages], [env.unwrapped])
    assert generation.text == REPLY
    _, _, _, _, info = env.step(generation.text)
    assert info["format_valid"] and info["actions"] == ["Up", "Left"]


def test_a_tool_format_rollout_records_the_tools_and_its_training_rows_render_them(taught):
    model, tokenizer = taught
    _, messages, tools = first_turn()
    groups = EnvGroups(["AgentFrozenLake-v0"], [1], env_kwargs=ENV_KWARGS, seed=SEED, fixed_seeds=True)
    (trajectory,) = groups.rollout(HFPolicy(model, tokenizer, temperature=0.0, max_new_tokens=64), history=0)
    assert trajectory.tools == tools and trajectory.turns[0].reply == REPLY
    view = step_token_views(trajectory, tokenizer)[0]  # the row a trainer learns from: the prompt the model read
    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert view.input_ids[: len(prompt_ids)] == prompt_ids and not any(view.loss_mask[: len(prompt_ids)])
    assert tokenizer.decode([i for i, m in zip(view.input_ids, view.loss_mask, strict=True) if m]).startswith(REPLY)
