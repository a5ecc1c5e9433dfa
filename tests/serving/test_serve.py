"""``agentgym-bench serve``'s promises, checked with a real HTTP client on loopback: streaming, ``n``, ``usage``."""

import http.client
import json
import re
import urllib.parse

import pytest

from agentgym_bench.serving.chat import ChatServer
from agentgym_bench.serving.chat_request import MAX_N
from tests.rollout.test_hf import conversations


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny") as s:
        yield s


def post(server, body: dict) -> tuple[int, str, bytes]:
    """POST /v1/chat/completions; returns (status, content type, raw body), read to the end within 30 s."""
    url = urllib.parse.urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def events(raw: bytes) -> list[str]:
    """The ``data:`` payloads of a Server-Sent Events body, in order."""
    lines = raw.decode().split("\n\n")
    assert lines[-1] == "", "the stream must end with a blank line"
    assert all(line.startswith("data: ") for line in lines[:-1]), raw[:300]
    return [line[len("data: "):] for line in lines[:-1]]


def test_usage_counts_prompt_and_completion_tokens(server, model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    messages = conversations(1)[0]
    status, _, raw = post(server, {"model": "tiny", "messages": messages, "max_tokens": 6, "temperature": 0})
    assert status == 200
    answer = json.loads(raw)
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_tokens = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    usage = answer["usage"]
    assert usage["prompt_tokens"] == prompt_tokens
    assert 1 <= usage["completion_tokens"] <= 6
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_n_returns_n_choices_with_their_indices(server):
    body = {"model": "tiny", "messages": conversations(1)[0], "max_tokens": 8, "n": 3, "seed": 5}
    status, _, raw = post(server, body)
    assert status == 200
    answer = json.loads(raw)
    assert [c["index"] for c in answer["choices"]] == [0, 1, 2]
    assert all(isinstance(c["message"]["content"], str) for c in answer["choices"])
    assert len({c["message"]["content"] for c in answer["choices"]}) > 1, "an untrained model sampled 3x the same"
    assert json.loads(post(server, body)[2])["choices"] == answer["choices"]  # same seed, same choices


@pytest.mark.parametrize("n", [0, MAX_N + 1, 1.5, True, "2"])
def test_impossible_n_is_a_400_naming_n(server, n):
    status, _, raw = post(server, {"model": "tiny", "messages": conversations(1)[0], "n": n})
    assert status == 400
    assert "n=" in json.loads(raw)["error"]["message"]


def test_stream_sends_openai_chunks_that_add_up_to_the_reply(server):
    body = {"model": "tiny", "messages": conversations(1)[0], "max_tokens": 8, "temperature": 0, "logprobs": True}
    whole = json.loads(post(server, body)[2])
    status, content_type, raw = post(server, {**body, "stream": True, "stream_options": {"include_usage": True}})
    assert status == 200 and content_type.startswith("text/event-stream")
    data = events(raw)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "tiny" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    body_chunks = [c for c in chunks if c["choices"]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in body_chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert body_chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    streamed_logprobs = [lp["logprob"] for c in body_chunks for lp in (c["choices"][0].get("logprobs") or
                                                                       {"content": []})["content"]]
    assert streamed_logprobs == pytest.approx([lp["logprob"] for lp in whole["choices"][0]["logprobs"]["content"]],
                                              abs=1e-5)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


def test_stream_with_n_streams_every_choice(server):
    body = {"model": "tiny", "messages": conversations(1)[0], "max_tokens": 5, "n": 2, "seed": 1, "stream": True}
    chunks = [json.loads(d) for d in events(post(server, body)[2])[:-1]]
    finished = [c["choices"][0]["index"] for c in chunks if c["choices"][0]["finish_reason"] is not None]
    assert finished == [0, 1]


@pytest.mark.parametrize("field, value", [("stream", "yes"), ("temperature", float("nan")), ("top_p", 1.5),
                                          ("temperature", 2.5), ("messages", [])])
def test_bad_fields_are_a_400_naming_the_field(server, field, value):
    status, _, raw = post(server, {"model": "tiny", "messages": conversations(1)[0], field: value})
    assert status == 400
    assert field in json.loads(raw)["error"]["message"]


def test_the_official_openai_client_reads_choices_usage_and_streams(server):
    openai = pytest.importorskip("openai", reason="the dev extra installs the official client")
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=30, max_retries=0)
    messages = conversations(1)[0]
    answer = client.chat.completions.create(model="tiny", messages=messages, max_tokens=6, n=2, seed=3)
    assert [c.index for c in answer.choices] == [0, 1]
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    greedy = client.chat.completions.create(model="tiny", messages=messages, max_tokens=6, temperature=0)
    stream = client.chat.completions.create(model="tiny", messages=messages, max_tokens=6, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == greedy.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == greedy.usage.completion_tokens
    with pytest.raises(openai.BadRequestError, match="n="):
        client.chat.completions.create(model="tiny", messages=messages, n=0)


def _sdk(server):
    openai = pytest.importorskip("openai", reason="the dev extra installs the official client")
    return openai, openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=30, max_retries=0)


@pytest.mark.parametrize("as_list", [False, True])
def test_stop_cuts_the_reply_before_the_first_stop_string_also_streaming(server, as_list):
    openai, client = _sdk(server)
    messages = conversations(1)[0]
    whole = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0,
                                           logprobs=True)
    reply = whole.choices[0].message.content
    assert whole.choices[0].finish_reason == "length" and len(reply) > 8, reply
    stop = reply[5:8]
    stops = ["never in this reply \u2603", stop] if as_list else stop
    cut = client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0, stop=stops,
                                         logprobs=True)
    assert cut.choices[0].message.content == reply[: reply.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    assert 1 <= len(cut.choices[0].logprobs.content) < len(whole.choices[0].logprobs.content)  # the kept tokens'
    chunks = list(client.chat.completions.create(model="tiny", messages=messages, max_tokens=16, temperature=0,
                                                 stop=stops, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == reply[: reply.index(stop)]
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["stop"]


def test_a_stop_string_not_in_the_reply_changes_nothing(server):
    _, client = _sdk(server)
    messages = conversations(1)[0]
    whole = client.chat.completions.create(model="tiny", messages=messages, max_tokens=8, temperature=0)
    same = client.chat.completions.create(model="tiny", messages=messages, max_tokens=8, temperature=0,
                                          stop=["\u2603\u2603"])
    assert same.choices[0].message.content == whole.choices[0].message.content
    assert same.choices[0].finish_reason == whole.choices[0].finish_reason


@pytest.mark.parametrize("stop", [["a", "b", "c", "d", "e"], "", [""], 3, [None]])
def test_bad_stop_is_a_400_naming_stop(server, stop):
    openai, client = _sdk(server)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=conversations(1)[0], max_tokens=4, stop=stop)
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", "stop", "invalid_value")


def test_an_unknown_model_is_a_404_model_not_found(server):
    openai, client = _sdk(server)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="wrongname", messages=conversations(1)[0], max_tokens=4)
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", "model", "model_not_found")
    assert "wrongname" in error["message"]
    with pytest.raises(openai.NotFoundError):  # streaming too: refused before the first event
        client.chat.completions.create(model="wrongname", messages=conversations(1)[0], max_tokens=4, stream=True)


def test_models_by_id_returns_the_served_model_and_404_for_another(server):
    openai, client = _sdk(server)
    model = client.models.retrieve("tiny")
    assert (model.id, model.object, model.owned_by) == ("tiny", "model", "agentgym-bench")
    assert [m.id for m in client.models.list()] == ["tiny"]
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("other")
    assert (caught.value.body["param"], caught.value.body["code"]) == ("model", "model_not_found")


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("value", [0, -1])
def test_max_tokens_zero_or_negative_is_a_400_naming_it(server, field, value):
    openai, client = _sdk(server)
    other = {"max_completion_tokens": 4} if field == "max_tokens" else {"max_tokens": 4}  # the other one is valid
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=conversations(1)[0], **{field: value, **other})
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", field,
                                                              "integer_below_min_value")
    assert f"{field}={value}" in error["message"]


def test_content_given_as_text_parts_is_read_as_the_joined_text(server):
    _, client = _sdk(server)
    messages = conversations(1)[0]
    last = messages[-1]["content"]
    first, rest = last[: len(last) // 2], last[len(last) // 2:]
    as_string = [*messages[:-1], {"role": messages[-1]["role"], "content": f"{first}\n{rest}"}]
    as_parts = [*messages[:-1], {"role": messages[-1]["role"],
                                 "content": [{"type": "text", "text": first}, {"type": "text", "text": rest}]}]
    whole = client.chat.completions.create(model="tiny", messages=as_string, max_tokens=6, temperature=0)
    parts = client.chat.completions.create(model="tiny", messages=as_parts, max_tokens=6, temperature=0)
    assert parts.choices[0].message.content == whole.choices[0].message.content
    assert parts.usage.prompt_tokens == whole.usage.prompt_tokens


@pytest.mark.parametrize("part, param, code", [
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, "messages[0].content[1].type",
     "invalid_value"),
    ({"type": "text"}, "messages[0].content[1].text", "invalid_type"),
    ("text", "messages[0].content[1]", "invalid_type"),
])
def test_a_content_part_other_than_text_is_a_400_naming_it(server, part, param, code):
    openai, client = _sdk(server)
    messages = [{"role": "user", "content": [{"type": "text", "text": "hello"}, part]}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=messages, max_tokens=4)
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert param in error["message"]


def test_a_prompt_over_the_context_is_a_400_context_length_exceeded(server):
    openai, client = _sdk(server)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "_" * 1200}], max_tokens=4)
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", "messages",
                                                              "context_length_exceeded")


@pytest.mark.parametrize("field, value", [("response_format", {"type": "json_object"})])
def test_options_the_server_cannot_honour_are_a_400_naming_them(server, field, value):
    openai, client = _sdk(server)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny", messages=conversations(1)[0], max_tokens=4, **{field: value})
    error = caught.value.body
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", field, "invalid_value")
    text = client.chat.completions.create(model="tiny", messages=conversations(1)[0], max_tokens=4,
                                          response_format={"type": "text"}, top_logprobs=0, logprobs=True)
    assert text.choices[0].logprobs.content  # the defaults OpenAI's clients may send still pass


def test_completion_ids_are_random_and_every_answer_carries_an_x_request_id(server):
    """Ids are ``chatcmpl-`` and 32 random hex digits (not a counter that restarts with the server); every answer,
    errors included, carries ``x-request-id``: the client's own when it sends a short token, as vLLM echoes it."""
    url = urllib.parse.urlsplit(server.base_url)
    body = json.dumps({"model": "tiny", "messages": conversations(1)[0], "max_tokens": 2})
    ids, request_ids = [], []
    for headers in ({}, {"X-Request-Id": "my-run.7:turn-3"}, {"X-Request-Id": "not a token \u2603"}):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", "/v1/chat/completions", body=body.encode(),
                     headers={"Content-Type": "application/json", **{k: v.encode() for k, v in headers.items()}})
        response = conn.getresponse()
        ids.append(json.loads(response.read())["id"])
        request_ids.append(response.getheader("x-request-id"))
        conn.close()
    assert all(re.fullmatch(r"chatcmpl-[0-9a-f]{32}", i) for i in ids) and len(set(ids)) == 3, ids
    assert request_ids[1] == "my-run.7:turn-3"
    assert all(re.fullmatch(r"[0-9a-f]{32}", r) for r in (request_ids[0], request_ids[2])), request_ids
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("GET", "/v1/nowhere")
    response = conn.getresponse()
    assert response.status == 404 and re.fullmatch(r"[0-9a-f]{32}", response.getheader("x-request-id"))
    conn.close()
