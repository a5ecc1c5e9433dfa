"""The OpenAI-compatible backend against our server on loopback serving the local model: real HTTP round trips."""

import contextlib
import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest

from agentgym_bench.rollout.hf import HFPolicy
from agentgym_bench.rollout.openai_compat import GenerationError, OpenAIPolicy
from agentgym_bench.serving.chat import ChatHandler, ChatServer
from tests.rollout.test_hf import conversations


class FaultyHandler(ChatHandler):
    """Misbehaves on the first ``faults`` POSTs: sleeps (``mode="slow"``) or answers 500 (``mode="error"``)."""

    def do_POST(self):  # noqa: N802
        server = self.server
        with server.count_lock:
            server.posts += 1
            n = server.posts
        if n <= server.faults and server.mode == "error":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._error(500, "injected failure", "server_error")
            return
        if n <= server.faults and server.mode == "slow":
            time.sleep(server.delay)
        if server.mode == "hold":  # count requests held here at once (a window inside each request's lifetime)
            with server.count_lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            time.sleep(server.delay)
            with server.count_lock:
                server.in_flight -= 1
        super().do_POST()


@pytest.fixture
def server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", handler=FaultyHandler) as s:
        s.count_lock, s.posts, s.in_flight, s.max_in_flight = threading.Lock(), 0, 0, 0
        s.faults, s.mode, s.delay = 0, "", 0.0
        yield s


def test_replies_over_http_equal_the_local_greedy_replies(server, model_and_tokenizer):
    convs = conversations(6)
    remote = OpenAIPolicy(server.base_url, "tiny", temperature=0, max_tokens=10, logprobs=True).generate(convs)
    local = HFPolicy(*model_and_tokenizer, temperature=0, max_new_tokens=10).generate(convs)
    assert [g.text for g in remote] == [g.text for g in local]
    for r, g in zip(remote, local, strict=True):
        assert r.token_ids is None
        assert r.logprobs == pytest.approx(g.logprobs, abs=1e-4)
    assert server.posts == 6


def test_models_route_and_seeded_sampling(server):
    with urllib.request.urlopen(server.base_url + "/models") as response:
        assert json.loads(response.read())["data"][0]["id"] == "tiny"
    convs = conversations(4)
    a = OpenAIPolicy(server.base_url, "tiny", max_tokens=8, seed=7).generate(convs)
    b = OpenAIPolicy(server.base_url, "tiny", max_tokens=8, seed=7).generate(convs)
    assert [g.text for g in a] == [g.text for g in b]


def test_a_timeout_is_retried(server):
    server.faults, server.mode, server.delay = 1, "slow", 2.0
    policy = OpenAIPolicy(server.base_url, "tiny", temperature=0, max_tokens=4, timeout=0.5, max_retries=2,
                          backoff=0.01)
    assert len(policy.generate(conversations(1))) == 1
    assert server.posts == 2


def test_a_timeout_without_retries_is_an_error_naming_it(server):
    server.faults, server.mode, server.delay = 1, "slow", 2.0
    policy = OpenAIPolicy(server.base_url, "tiny", max_tokens=4, timeout=0.5, max_retries=0)
    with pytest.raises(GenerationError, match="timed out"):
        policy.generate(conversations(1))


def test_a_500_is_retried_then_succeeds(server):
    server.faults, server.mode = 2, "error"
    policy = OpenAIPolicy(server.base_url, "tiny", max_tokens=4, max_retries=2, backoff=0.01)
    assert len(policy.generate(conversations(1))) == 1
    assert server.posts == 3


def test_a_prompt_over_the_context_is_a_400_and_not_retried(server):
    # a prompt longer than the model's 1024 positions: the server refuses it as OpenAI does, and a 4xx is final
    policy = OpenAIPolicy(server.base_url, "tiny", max_tokens=4, max_retries=1, backoff=0.01)
    with pytest.raises(GenerationError, match="HTTP 400.*1024 positions"):
        policy.generate([[{"role": "user", "content": "_" * 1200}]])
    assert server.posts == 1


def test_concurrency_is_bounded(server):
    server.mode, server.delay = "hold", 0.05
    OpenAIPolicy(server.base_url, "tiny", max_tokens=2, max_concurrency=3).generate(conversations(9))
    assert server.posts == 9
    assert 1 < server.max_in_flight <= 3


def test_api_key_from_the_environment(model_and_tokenizer, monkeypatch):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, api_key="s3cret") as s:
        monkeypatch.delenv("AGB_TEST_KEY", raising=False)
        with pytest.raises(GenerationError, match="HTTP 401"):
            OpenAIPolicy(s.base_url, "local", api_key_env="AGB_TEST_KEY", max_tokens=2).generate(conversations(1))
        monkeypatch.setenv("AGB_TEST_KEY", "s3cret")
        assert OpenAIPolicy(s.base_url, "local", api_key_env="AGB_TEST_KEY", max_tokens=2).generate(conversations(1))


def test_malformed_requests_are_400_and_not_retried(server):
    request = urllib.request.Request(server.base_url + "/chat/completions", data=b'{"messages": "hi"}',
                                     headers={"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request)
    assert info.value.code == 400
    policy = OpenAIPolicy(server.base_url.replace("/v1", "/nope"), "tiny", max_retries=3, backoff=0.01)
    with pytest.raises(GenerationError, match="HTTP 404"):
        policy.generate(conversations(1))
    assert server.posts == 2


def _answer(content="Up", **usage) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                       "usage": usage}).encode()


@contextlib.contextmanager
def answering(body: bytes):
    """A loopback server answering 200 and ``body`` to every GET and POST; yields ``(base_url, posts)``."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    posts: list[bytes] = []

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802
            posts.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.do_GET()

        def log_message(self, *args):
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Answer) as http:
        threading.Thread(target=http.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{http.server_address[1]}/v1", posts
        finally:
            http.shutdown()


@pytest.mark.parametrize("body, why", [
    (b"<html>a web page</html>", "the answer is not JSON"),
    (json.dumps({"choices": []}).encode(), "the answer is not an OpenAI-compatible completion: {'choices': []}"),
    (_answer(content=42), "the answer is not an OpenAI-compatible completion"),
    (_answer(prompt_tokens=3, completion_tokens="many"),
     "not an OpenAI-compatible completion (usage.completion_tokens='many' is not a count of tokens)"),
    (_answer(prompt_tokens=-5, completion_tokens=2), "(usage.prompt_tokens=-5 is not a count of tokens)"),
])
def test_an_answer_of_another_shape_is_named_as_such_once_and_not_as_no_answer(body, why):
    """An API walkthrough of 2026-12-02: a server answering HTML or bad token counts was retried, told to be
    "still running", or crashed eval with a traceback (a count that is not an integer)."""
    from agentgym_bench.rollout.endpoint import what_to_change
    from agentgym_bench.rollout.openai_compat import NOT_OPENAI

    with answering(body) as (url, posts):
        policy = OpenAIPolicy(url, "tiny", max_retries=3, backoff=0.01)
        with pytest.raises(GenerationError, match=re.escape(why)) as caught:
            policy.generate(conversations(1))
    assert caught.value.code == NOT_OPENAI and caught.value.status == 200 and len(posts) == 1
    assert what_to_change(caught.value).startswith("the endpoint answered, but not as OpenAI's API does")
    assert policy.prompt_tokens == policy.completion_tokens == 0


def test_a_models_route_answering_a_web_page_is_not_called_silent():
    from agentgym_bench.errors import UserError
    from agentgym_bench.rollout.endpoint import served_models

    with answering(b"<html>a web page</html>") as (url, _):
        with pytest.raises(UserError, match=r"/v1/models answered something else than a model list \(not JSON"):
            served_models(url)


def test_unreachable_server():
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m", max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(GenerationError, match="2 attempt"):
        policy.generate(conversations(1))


@pytest.mark.parametrize("kwargs, match", [({"base_url": "localhost:8000"}, "base_url"), ({"timeout": 0}, "timeout"),
                                           ({"max_retries": -1}, "max_retries")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OpenAIPolicy(**{"base_url": "http://127.0.0.1:1/v1", "model": "m", **kwargs})


def test_a_404_from_a_url_without_v1_says_so():
    from agentgym_bench.rollout.endpoint import what_to_change

    hint = what_to_change(GenerationError("x", url="http://127.0.0.1:8000/chat/completions", status=404))
    assert "no /v1 in it" in hint
    assert "no /v1" not in what_to_change(GenerationError("x", url="http://h/v1/chat/completions", status=404))
