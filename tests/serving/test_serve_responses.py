"""``serve``'s ``/v1/responses`` (issue 62, item 2), checked with the official SDK's ``responses`` client against the
SDK's own types: text and function-call items, streamed events, ``previous_response_id`` and the bounded store, the
fields it refuses; the ``openai-responses:`` policy, which replies as the chat route's ``openai:`` does, through
``eval`` too."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from agentgym_bench.agent.tools import ACTION_TOOL
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.openai_compat import OpenAIPolicy, OpenAIResponsesPolicy
from agentgym_bench.rollout.specs import SPEC_HELP, parse_spec, policy_from_spec
from agentgym_bench.serving.chat import ChatServer
from agentgym_bench.serving.chat_request import FieldError
from agentgym_bench.serving.responses import ResponseStore
from tests.cli import cli
from tests.commands.test_eval import SUITE, tiny_server
from tests.rollout.test_hf import conversations
from tests.rollout.test_tool_calls import REPLY, client, first_turn, taught  # noqa: F401 - taught: a fixture

openai = pytest.importorskip("openai", reason="the dev extra installs the official client")
from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402

EVENTS = TypeAdapter(ResponseStreamEvent)


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    with ChatServer(*model_and_tokenizer, model_name="tiny") as s:
        yield s



def create(server, **body) -> Response:
    """``responses.create`` whose raw JSON is validated against the SDK's ``Response`` type."""
    raw = client(server).responses.with_raw_response.create(**body)
    return Response.model_validate(json.loads(raw.http_response.text))


def chat_text(server, messages, **body) -> str:
    answer = client(server).chat.completions.create(model="tiny", messages=messages, **body)
    return answer.choices[0].message.content


def test_a_string_input_is_one_user_message_sampled_as_the_chat_route_samples_it(server):
    response = create(server, model="tiny", input="hello there", max_output_tokens=8, temperature=0.9,
                      top_p=0.95, extra_body={"seed": 11})
    assert response.object == "response" and response.id.startswith("resp_") and response.model == "tiny"
    (message,) = response.output
    assert message.type == "message" and message.role == "assistant" and message.content[0].type == "output_text"
    assert response.output_text == chat_text(server, [{"role": "user", "content": "hello there"}], max_tokens=8,
                                             temperature=0.9, top_p=0.95, seed=11)
    usage = response.usage
    assert usage.output_tokens <= 8 and usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert response.status in ("completed", "incomplete")
    if response.status == "incomplete":
        assert response.incomplete_details.reason == "max_output_tokens" and usage.output_tokens == 8


def test_message_items_roles_parts_and_instructions_build_the_chat_prompt(server):
    system = "You play a game."
    messages = [{"role": "system", "content": system}, *conversations(3)[2]]
    rest = messages[1:]
    items = [{"role": "developer", "content": [{"type": "input_text", "text": system}]}]
    items += [{"type": "message", "role": m["role"],
               "content": [{"type": "output_text" if m["role"] == "assistant" else "input_text",
                            "text": m["content"]}]} for m in rest]
    settings = {"max_output_tokens": 6, "extra_body": {"seed": 4}}
    as_items = create(server, model="tiny", input=items, **settings).output_text
    as_instructions = create(server, model="tiny", instructions=system, input=items[1:], **settings).output_text
    expected = chat_text(server, messages, max_tokens=6, seed=4)
    assert [m["role"] for m in rest] == ["user", "assistant", "user", "assistant", "user"]
    assert as_items == as_instructions == expected


def test_streaming_sends_the_sdk_events_in_order_and_they_add_up_to_the_answer(server):
    body = {"model": "tiny", "input": "stream me", "max_output_tokens": 10, "extra_body": {"seed": 2}}
    whole = create(server, **body)
    raw = client(server).responses.with_raw_response.create(**body, stream=True).http_response.read().decode()
    blocks = [b for b in raw.split("\n\n") if b]
    names = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    events = [EVENTS.validate_python(json.loads(b.split("\n")[1].removeprefix("data: "))) for b in blocks]
    assert [e.type for e in events] == names and [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert names[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"] and len(deltas) >= 1
    assert names[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          f"response.{whole.status}"]
    done = next(e for e in events if e.type == "response.output_text.done")
    assert "".join(deltas) == done.text == whole.output_text == events[-1].response.output_text
    # the SDK's own stream reader takes the same events
    streamed = list(client(server).responses.create(**body, stream=True))
    assert [e.type for e in streamed] == names and streamed[-1].response.output_text == whole.output_text


def test_previous_response_id_continues_the_stored_conversation(server):
    first = create(server, model="tiny", input="first", instructions="be brief", max_output_tokens=5,
                   extra_body={"seed": 1})
    follow = create(server, model="tiny", input=[{"role": "user", "content": "second"}], max_output_tokens=5,
                    previous_response_id=first.id, extra_body={"seed": 6})
    whole = create(server, model="tiny", max_output_tokens=5, extra_body={"seed": 6}, input=[
        {"role": "user", "content": "first"}, {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "second"}])  # instructions are not carried on, as OpenAI's are not
    assert follow.previous_response_id == first.id and follow.output_text == whole.output_text
    assert client(server).responses.retrieve(first.id).output_text == first.output_text


def test_an_unknown_or_unstored_response_is_openais_404(server):
    unstored = create(server, model="tiny", input="x", max_output_tokens=2, store=False)
    for response_id in ("resp_unknown", unstored.id):
        with pytest.raises(openai.NotFoundError) as caught:
            client(server).responses.create(model="tiny", input="y", previous_response_id=response_id)
        assert caught.value.body["param"] == "previous_response_id"
        assert caught.value.body["code"] == "previous_response_not_found" and response_id in str(caught.value)
        with pytest.raises(openai.NotFoundError):
            client(server).responses.retrieve(response_id)


def test_the_store_keeps_the_last_responses_only():
    store = ResponseStore(size=2)
    for k in range(3):
        store.keep({"id": f"resp_{k}"}, [{"role": "user", "content": str(k)}])
    assert store.get("resp_2")[1] == [{"role": "user", "content": "2"}] and store.get("resp_1")
    with pytest.raises(FieldError) as caught:
        store.get("resp_0")
    assert caught.value.status == 404


@pytest.mark.parametrize(("body", "param"), [
    ({"frobnicate": 1, "top_k": 3}, "frobnicate"),
    ({"truncation": "auto"}, "truncation"),
    ({"background": True}, "background"),
    ({"text": {"format": {"type": "json_object"}}}, "text"),
    ({"include": ["message.output_text.logprobs"]}, "include"),
    ({"reasoning": {"effort": "low"}}, "reasoning"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"tools": [{"type": "web_search"}]}, "tools[0]"),
    ({"tool_choice": {"type": "file_search"}}, "tool_choice"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0].type"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0].type"),
    ({"input": []}, "input"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"temperature": 3}, "temperature"),
    ({"store": "yes"}, "store"),
])
def test_unsupported_or_wrong_fields_are_a_400_naming_them(server, body, param):
    request = {"model": "tiny", "input": "hi", **body}
    standard = {k: request.pop(k) for k in list(request) if k in ("model", "input", "truncation", "background", "text",
                                                                   "include", "reasoning", "top_logprobs", "tools",
                                                                   "tool_choice", "max_output_tokens", "temperature",
                                                                   "store", "conversation")}
    with pytest.raises(openai.BadRequestError) as caught:
        client(server).responses.create(**standard, extra_body=request or None)
    assert caught.value.body["param"] == param and caught.value.status_code == 400
    if param == "frobnicate":
        assert "frobnicate, top_k" in caught.value.body["message"]


def test_harmless_fields_are_accepted_and_metadata_is_echoed(server):
    response = create(server, model="tiny", input="hi", max_output_tokens=2, user="u", safety_identifier="s",
                      prompt_cache_key="k", service_tier="auto", metadata={"run": "7"}, truncation="disabled",
                      parallel_tool_calls=True, stream_options=None)
    assert response.metadata == {"run": "7"}
    with pytest.raises(openai.NotFoundError) as caught:
        client(server).responses.create(model="other", input="hi")
    assert caught.value.body["code"] == "model_not_found"


@pytest.fixture(scope="module")
def taught_server(taught):  # noqa: F811 - the fixture imported above
    with ChatServer(*taught, model_name="tiny") as s:
        yield s


def flat(tools):
    return [{"type": "function", **t["function"]} for t in tools]


def test_function_calls_come_as_items_and_stream_their_arguments(taught_server):
    _, messages, tools = first_turn()
    body = {"model": "tiny", "input": messages, "tools": flat(tools), "temperature": 0, "max_output_tokens": 64}
    response = create(taught_server, **body)
    (call,) = response.output
    assert call.type == "function_call" and call.name == ACTION_TOOL and call.call_id.startswith("call_")
    assert json.loads(call.arguments) == {"actions": ["Up", "Left"]} and response.status == "completed"
    events = list(client(taught_server).responses.create(**body, stream=True))
    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"]
    assert events[4].arguments == call.arguments and events[-1].response.output[0].name == ACTION_TOOL
    # the call's output goes back as a function_call_output item after the stored response
    after = create(taught_server, model="tiny", previous_response_id=response.id, tools=flat(tools),
                   max_output_tokens=4, input=[{"type": "function_call_output", "call_id": call.call_id,
                                                "output": "moved"}])
    replayed = create(taught_server, model="tiny", tools=flat(tools), max_output_tokens=4, input=[
        *messages, {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "moved"}], extra_body={"seed": 0})
    assert after.status in ("completed", "incomplete") and replayed.status in ("completed", "incomplete")


def test_tool_choice_none_keeps_text_and_a_named_function_is_called(taught_server):
    _, messages, tools = first_turn()
    body = {"model": "tiny", "input": messages, "tools": flat(tools), "temperature": 0, "max_output_tokens": 64}
    text = create(taught_server, **body, tool_choice="none")
    assert [item.type for item in text.output] == ["message"]
    forced = create(taught_server, **{**body, "input": "hi"}, tool_choice={"type": "function", "name": ACTION_TOOL})
    assert [(item.type, item.name) for item in forced.output if item.type == "function_call"] == [
        ("function_call", ACTION_TOOL)]


def test_the_responses_policy_replies_as_the_chat_policy_does(server, taught_server):
    keys = [(0, k) for k in range(3)]
    settings = {"temperature": 1.0, "max_tokens": 8, "seed": 5}
    chat = OpenAIPolicy(server.base_url, "tiny", **settings).generate(conversations(3), keys=keys)
    responses = OpenAIResponsesPolicy(server.base_url, "tiny", **settings).generate(conversations(3), keys=keys)
    assert [g.text for g in responses] == [g.text for g in chat]
    assert [g.completion_tokens for g in responses] == [g.completion_tokens for g in chat]
    env, messages, _ = first_turn()
    (generation,) = OpenAIResponsesPolicy(taught_server.base_url, "tiny", temperature=0.0, max_tokens=64).generate(
        [messages], [env.unwrapped])
    assert generation.text == REPLY
    with pytest.raises(ValueError, match="logprobs"):
        OpenAIResponsesPolicy(server.base_url, "tiny", logprobs=True)


def test_the_spec_names_the_responses_policy_and_records_an_openai_endpoint():
    assert "openai-responses:MODEL@URL" in SPEC_HELP
    assert parse_spec("openai-responses:m@http://h/v1") == ("openai-responses", "m@http://h/v1")
    with pytest.raises(UserError, match="openai-responses:m@http://h/v1"):
        parse_spec("openai-responses:m@h/v1")
    policy, record = policy_from_spec("openai-responses:m@http://127.0.0.1:9/v1")
    assert isinstance(policy, OpenAIResponsesPolicy) and policy.url == "http://127.0.0.1:9/v1/responses"
    assert record["kind"] == "openai" and record["model"] == "m"


def test_eval_through_responses_writes_the_chat_routes_replies(tmp_path):
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(SUITE))
    run = ["eval", "--suite", str(suite), "--max-new-tokens", "16", "--prompt", "compact", "--history", "0",
           "--episodes", "2"]
    with tiny_server(tmp_path / "m", 1024) as s:
        for kind in ("openai", "openai-responses"):
            done = cli(*run, "--policy", f"{kind}:tiny@{s.base_url}", "--out", f"{kind}.json.gz", cwd=tmp_path)
            assert done.returncode == 0, done.stderr

    def replies(name: str) -> list[list[list[str]]]:
        return [[[t.reply for t in ep.turns] for ep in e.episodes] for e in read_results(tmp_path / name).entries]

    assert replies("openai-responses.json.gz") == replies("openai.json.gz")
    assert any(r for e in replies("openai.json.gz") for ep in e for r in ep)
    help_text = cli("eval", "--help", cwd=tmp_path).stdout
    assert "openai-responses:MODEL@URL(theResponsesAPI)" in "".join(help_text.split())  # wrapped at its hyphen
