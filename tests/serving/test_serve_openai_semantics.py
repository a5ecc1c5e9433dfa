"""``serve`` to the letter of OpenAI's chat completions (issue 62, item 3), checked with the official client on
loopback and the SDK's own types: the reply fills the room the prompt leaves when ``max_tokens`` is absent;
``logprobs`` carry ``bytes`` and ``top_logprobs`` (up to 20) of the distribution sampled from; ``logit_bias`` and
the two penalties change the logits by OpenAI's formula; ``tool_choice`` ``"required"`` and a named function force a
call; every parameter is held to OpenAI's range."""

from __future__ import annotations

import json

import pytest
import torch

from agentgym_bench.serving.chat import CALL_HEAD, ChatServer, call_arguments, continuation_logprobs
from agentgym_bench.serving.chat_request import MAX_TOP_LOGPROBS, Adjust
from tests.rollout.test_hf import conversations

openai = pytest.importorskip("openai", reason="the dev extra installs the official client")
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("move", "look")]


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny") as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=60, max_retries=0)


def create(client, **fields):
    """A completion through the official client, checked against the SDK's own type from the raw JSON."""
    raw = client.chat.completions.with_raw_response.create(model="tiny", **fields)
    ChatCompletion.model_validate(json.loads(raw.text))  # pydantic's strict check of what came over the wire
    return raw.parse()


def refused(client, param, **fields):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", **fields)
    error = caught.value.body
    assert (error["type"], error["param"]) == ("invalid_request_error", param), error
    return error


def prompt_ids(tokenizer, messages, tools=None):
    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    return prompt, tokenizer(prompt, add_special_tokens=False)["input_ids"]


@torch.no_grad()
def next_logprobs(model, ids):
    """The model's log-probabilities of the token after ``ids``."""
    return torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, -1].float(), dim=-1)


# --- max_tokens absent: the room left ---

def test_without_max_tokens_a_long_prompt_that_fits_gets_the_room_left(client, model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    messages = [{"role": "user", "content": "go " * 420}]
    _, ids = prompt_ids(tokenizer, messages)
    assert 768 < len(ids) < 1024  # refused before the fix: 256 tokens were reserved
    answer = create(client, messages=messages, temperature=0)
    assert answer.usage.prompt_tokens == len(ids)
    assert answer.usage.completion_tokens <= 1024 - len(ids)
    if answer.choices[0].finish_reason == "length":
        assert answer.usage.total_tokens == 1024
    full = [{"role": "user", "content": "go " * 600}]
    error = refused(client, "messages", messages=full)
    assert error["code"] == "context_length_exceeded" and "no room for a reply" in error["message"]


# --- logprobs: bytes and top_logprobs ---

def test_logprobs_carry_bytes_and_the_top_logprobs_of_the_model(client, model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    messages = conversations(1)[0]
    answer = create(client, messages=messages, max_tokens=3, temperature=0, logprobs=True,
                    top_logprobs=MAX_TOP_LOGPROBS)
    content = answer.choices[0].logprobs.content
    assert content and all(entry.bytes == list(entry.token.encode()) for entry in content)
    assert all(len(entry.top_logprobs) == MAX_TOP_LOGPROBS for entry in content)
    first = content[0]
    _, ids = prompt_ids(tokenizer, messages)
    expected = next_logprobs(model, ids).topk(MAX_TOP_LOGPROBS)
    assert [t.token for t in first.top_logprobs] == [tokenizer.decode([i]) for i in expected.indices.tolist()]
    assert [t.logprob for t in first.top_logprobs] == pytest.approx(expected.values.tolist(), abs=1e-4)
    assert (first.top_logprobs[0].token, first.top_logprobs[0].logprob) == (first.token,
                                                                             pytest.approx(first.logprob, abs=1e-6))
    assert all(t.bytes == list(t.token.encode()) for t in first.top_logprobs)
    plain = create(client, messages=messages, max_tokens=3, temperature=0, logprobs=True)
    assert [e.top_logprobs for e in plain.choices[0].logprobs.content] == [[], [], []][: len(content)]
    assert [e.token for e in plain.choices[0].logprobs.content] == [e.token for e in content]


def test_sampled_top_logprobs_are_of_the_sampling_distribution_also_streamed(client):
    fields = {"messages": conversations(1)[0], "max_tokens": 6, "seed": 4, "temperature": 0.7, "top_p": 0.9,
              "logprobs": True, "top_logprobs": 5}
    answer = create(client, **fields)
    for entry in answer.choices[0].logprobs.content:
        tops = [t.logprob for t in entry.top_logprobs]
        assert 1 <= len(tops) <= 5 and tops == sorted(tops, reverse=True)
        assert entry.logprob <= tops[0] + 1e-6
        if entry.token in [t.token for t in entry.top_logprobs]:
            assert entry.logprob == pytest.approx(dict((t.token, t.logprob) for t in entry.top_logprobs)[entry.token])
    chunks = list(client.chat.completions.create(model="tiny", stream=True, **fields))
    assert all(isinstance(c, ChatCompletionChunk) for c in chunks)
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert [e.model_dump() for e in streamed] == [e.model_dump() for e in answer.choices[0].logprobs.content]


@pytest.mark.parametrize("fields", [{"logprobs": True, "top_logprobs": MAX_TOP_LOGPROBS + 1},
                                    {"logprobs": True, "top_logprobs": -1}, {"top_logprobs": 2},
                                    {"logprobs": "yes"}])
def test_top_logprobs_out_of_range_or_without_logprobs_is_a_400(client, fields):
    refused(client, "top_logprobs" if "top_logprobs" in fields else "logprobs", messages=conversations(1)[0],
            max_tokens=2, **fields)


# --- logit_bias and the penalties ---

def test_logit_bias_shifts_the_logits_it_names(client, model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    messages = conversations(1)[0]
    _, ids = prompt_ids(tokenizer, messages)
    greedy = create(client, messages=messages, max_tokens=4, temperature=0)
    first = int(next_logprobs(model, ids).argmax())
    chosen = tokenizer.convert_tokens_to_ids("cake")
    forced = create(client, messages=messages, max_tokens=4, temperature=0, logit_bias={str(chosen): 100})
    assert forced.choices[0].message.content == "cake" * 4
    banned = create(client, messages=messages, max_tokens=1, temperature=0, logit_bias={str(first): -100},
                    logprobs=True, top_logprobs=3)
    expected = torch.log_softmax(next_logprobs(model, ids) + torch.nn.functional.one_hot(
        torch.tensor(first), len(tokenizer)) * -100, dim=-1).topk(3)
    entry = banned.choices[0].logprobs.content[0]
    assert entry.token != tokenizer.decode([first]) and greedy.choices[0].message.content
    assert [t.logprob for t in entry.top_logprobs] == pytest.approx(expected.values.tolist(), abs=1e-4)


@pytest.mark.parametrize("penalty", ["frequency_penalty", "presence_penalty"])
def test_a_penalty_lowers_the_logits_of_tokens_already_in_the_reply(client, model_and_tokenizer, penalty):
    model, tokenizer = model_and_tokenizer
    messages = conversations(1)[0]
    _, ids = prompt_ids(tokenizer, messages)
    answer = create(client, messages=messages, max_tokens=2, temperature=0, logprobs=True, top_logprobs=4,
                    **{penalty: 1.5})
    first, second = answer.choices[0].logprobs.content
    assert first.top_logprobs[0].logprob == pytest.approx(float(next_logprobs(model, ids).max()), abs=1e-4)
    token = next_logprobs(model, ids).argmax()
    logits = next_logprobs(model, [*ids, int(token)])  # log-softmax: the same distribution as the logits
    logits[token] -= 1.5
    assert [t.logprob for t in second.top_logprobs] == pytest.approx(
        torch.log_softmax(logits, dim=-1).topk(4).values.tolist(), abs=1e-4)


def test_adjust_is_openais_formula():
    logits = torch.zeros(2, 5)
    generated = torch.tensor([[1, 1, 2], [3, 4, 4]])
    out = Adjust({0: 2.0, 4: -1.0}, frequency_penalty=0.5, presence_penalty=0.25)(generated, logits)
    assert out.tolist() == [[2.0, -1.25, -0.75, 0.0, -1.0], [2.0, 0.0, 0.0, -0.75, -2.25]]
    assert Adjust({}, 0.5, 0.25)(torch.zeros(2, 0, dtype=torch.long), logits).tolist() == logits.tolist()


@pytest.mark.parametrize("fields, param", [
    ({"frequency_penalty": 2.5}, "frequency_penalty"), ({"presence_penalty": -2.1}, "presence_penalty"),
    ({"logit_bias": {"5": 101}}, "logit_bias"), ({"logit_bias": {"cake": 1}}, "logit_bias"),
    ({"logit_bias": {"99999999": 1}}, "logit_bias"), ({"logit_bias": [1]}, "logit_bias"),
    ({"temperature": 2.01}, "temperature"), ({"top_p": 1.01}, "top_p"), ({"n": 0}, "n"),
    ({"max_completion_tokens": 0}, "max_completion_tokens")])
def test_values_outside_openais_ranges_are_a_400_naming_them(client, fields, param):
    refused(client, param, messages=conversations(1)[0], **fields)


def test_the_edges_of_openais_ranges_are_served(client):
    messages = conversations(1)[0]
    greedy = create(client, messages=messages, max_tokens=5, temperature=0)
    nucleus = create(client, messages=messages, max_tokens=5, temperature=2, top_p=0, seed=9, logprobs=True)
    assert nucleus.choices[0].message.content == greedy.choices[0].message.content  # top_p 0: the likeliest alone
    assert all(e.logprob == 0 for e in nucleus.choices[0].logprobs.content)
    create(client, messages=messages, max_tokens=2, frequency_penalty=-2, presence_penalty=2, logit_bias={"7": -100})


# --- tool_choice: required and a named function ---

@pytest.mark.parametrize("stream", [False, True])
def test_a_named_function_is_called_by_every_choice(client, stream):
    fields = {"messages": conversations(1)[0], "max_tokens": 6, "n": 3, "seed": 2, "tools": TOOLS,
              "tool_choice": {"type": "function", "function": {"name": "look"}}}
    if not stream:
        answer = create(client, **fields)
        for choice in answer.choices:
            assert choice.message.content is None and choice.finish_reason in ("tool_calls", "length")
            [call] = choice.message.tool_calls
            assert (call.type, call.function.name) == ("function", "look") and isinstance(call.function.arguments,
                                                                                          str)
        return
    chunks = list(client.chat.completions.create(model="tiny", stream=True, **fields))
    calls = [(c.choices[0].index, call.function.name) for c in chunks if c.choices and c.choices[0].delta.tool_calls
             for call in c.choices[0].delta.tool_calls]
    assert calls == [(0, "look"), (1, "look"), (2, "look")]


def test_required_calls_one_of_the_tools_the_likeliest_at_temperature_0(client, model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    messages = conversations(1)[0]
    prompt, _ = prompt_ids(tokenizer, messages, TOOLS)
    sampled = create(client, messages=messages, max_tokens=4, n=6, seed=1, tools=TOOLS, tool_choice="required")
    assert {c.message.tool_calls[0].function.name for c in sampled.choices} <= {"move", "look"}
    greedy = create(client, messages=messages, max_tokens=4, temperature=0, tools=TOOLS, tool_choice="required")
    scores = {}
    for name in ("move", "look"):  # each name scored alone, without padding
        ids = tokenizer(f'{prompt}{CALL_HEAD}{json.dumps(name)}, "arguments": ', add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        scores[name] = ids, logp
    assert greedy.choices[0].message.tool_calls[0].function.name == max(
        scores, key=lambda n: sum(float(scores[n][1][k - 1, scores[n][0][k]]) for k in range(len(prompt_ids(
            tokenizer, messages, TOOLS)[1]), len(scores[n][0]))))


def test_continuation_logprobs_match_one_sequence_at_a_time(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    sequences = [[5, 9, 11, 40, 41], [5, 9, 11, 77], [5, 9, 11, 40, 12, 13, 14]]
    got = continuation_logprobs(model, sequences, tokenizer.pad_token_id or 0)
    for sequence, score in zip(sequences, got, strict=True):
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([sequence])).logits[0].float(), dim=-1)
        assert score == pytest.approx(sum(float(logp[k - 1, sequence[k]]) for k in range(3, len(sequence))), abs=1e-4)


@pytest.mark.parametrize("fields", [{"tool_choice": "required"},
                                    {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "x"}}},
                                    {"tools": TOOLS, "tool_choice": "sometimes"}])
def test_a_forced_call_without_its_tool_is_a_400(client, fields):
    refused(client, "tool_choice", messages=conversations(1)[0], max_tokens=2, **fields)


def test_call_arguments_are_the_json_object_written_else_the_text():
    assert call_arguments(' {"actions": ["up"]}}\n') == '{"actions": ["up"]}'
    assert call_arguments(' {"actions": ["up"') == '{"actions": ["up"'
    assert call_arguments('"up"}') == '"up"}'
