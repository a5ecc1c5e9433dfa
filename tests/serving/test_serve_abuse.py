"""``agentgym-bench serve`` against a hostile client on loopback (issue 51): every malformed request gets a 4xx
answer, never a dropped connection; bodies are bounded in size and time; the model's lock is held for generation
only."""

import itertools
import json
import math
import socket
import time

import pytest

from agentgym_bench.http_body import ServerLimits
from agentgym_bench.serving.chat import ChatServer
from tests.raw_http import raw_exchange
from tests.rollout.test_hf import conversations


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", limits=ServerLimits(body_seconds=1.0, head_seconds=1.0)) as s:
        yield s


def exchange(server, head: bytes, body: bytes = b"", wait: float = 0.0) -> tuple[int, dict]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on a raw socket, then read the
    answer within 20 s: (status, JSON body)."""
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    return raw_exchange(port, head + b"\r\n\r\n" + body, wait)


def post(server, body: bytes, length: str | None = None) -> tuple[int, dict]:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
    length = str(len(body)) if length is None else length
    return exchange(server, head + f"\r\nContent-Length: {length}".encode(), body)


def body(**fields) -> bytes:
    return json.dumps({"model": "tiny", "messages": conversations(1)[0], **fields}).encode()


@pytest.mark.parametrize("raw, field", [
    (body(max_tokens=float("inf")), "max_tokens=inf"),
    (body(max_tokens=10**6), "max_tokens=1000000 must be an integer in [1, 1024]"),
    (body().replace(b'"model"', b'"seed": 1e999, "model"'), "seed=inf"),
    (body().replace(b'"model"', b'"seed": ' + b"9" * 5000 + b', "model"'), "bad request"),
    (body(temperature=float("-inf")), "temperature=-inf"),
    (body(top_p=float("nan")), "top_p=nan"),
    (b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests arrays and objects too deeply"),
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "bad request"),
])
def test_bad_numbers_and_shapes_are_a_400(server, raw, field):
    status, answer = post(server, raw)
    assert status == 400 and field in answer["error"]["message"], answer


@pytest.mark.parametrize("length, status", [("abc", 400), ("-5", 400), ("²", 400), (str(50 * 10**6), 413),
                                            (str(ServerLimits().max_body_bytes + 1), 413)])
def test_bad_or_huge_content_lengths_are_answered_without_reading_the_body(server, length, status):
    assert post(server, b"", length=length)[0] == status


def test_a_missing_content_length_is_a_411(server):
    assert exchange(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x")[0] == 411


def test_a_half_sent_body_is_a_408_and_holds_no_one_up(server):
    """A client that sends 10 of 100 promised bytes and waits: 408 after the body deadline (1 s here), while other
    clients are served meanwhile."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100"
    started = time.monotonic()
    status, answer = exchange(server, head, b'{"model": ', wait=0.1)
    assert status == 408 and "did not arrive within 1 s" in answer["error"]["message"]
    assert 0.9 < time.monotonic() - started < 10


def test_the_prompt_is_tokenised_outside_the_model_lock(server):
    """While another request holds the model (the lock taken here), an over-long prompt is rendered, tokenised
    and refused: it never waits for the lock."""
    with server.lock:
        started = time.monotonic()
        status, answer = post(server, body(messages=[{"role": "user", "content": "left " * 200_000}], max_tokens=8))
    assert status == 400 and "exceed the model's 1024 positions" in answer["error"]["message"]
    assert time.monotonic() - started < 15
    assert post(server, body(max_tokens=4))[0] == 200


def deep(levels: int) -> object:
    return json.loads("[" * levels + "]" * levels)


@pytest.mark.parametrize("fields", [
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"x": deep(900)}}}]},
    {"messages": [{"role": "user", "content": "hi", "extra": deep(900)}]},
])
def test_deep_nesting_below_the_json_parsers_limit_is_a_400(server, fields):
    """900 levels parse, and the chat template would recurse into them (RecursionError, a dropped connection):
    the body's depth is checked first."""
    status, answer = post(server, body(**fields))
    assert status == 400 and "nests" in answer["error"]["message"], answer


def closed_within(port: int, seconds: float, drip: bytes = b"") -> float:
    """Open a connection, send ``drip`` one byte every 0.2 s (or nothing); seconds until the server closes it."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
        for k in itertools.count():
            if time.monotonic() - started > seconds:
                return math.inf
            try:
                if drip:
                    sock.sendall(drip[k % len(drip): k % len(drip) + 1])
                if sock.recv(1024) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started


def test_a_request_head_sent_byte_by_byte_is_cut_off_at_the_head_deadline(server):
    """A slow-header client (one byte every 0.2 s, never ending its head) holds its thread no longer than the head
    deadline (1 s here), although every single read is well within the 5 s socket timeout."""
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    assert closed_within(port, 10, drip=b"GET /v1/models HTTP/1.1\r\nX-Slow: " + b"a" * 1000) < 4


def test_connections_over_the_cap_get_a_503_and_later_ones_are_served(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", limits=ServerLimits(max_connections=2)) as s:
        port = s.server_address[1]
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        time.sleep(0.5)
        status, answer = exchange(s, b"GET /v1/models HTTP/1.1\r\nHost: x")
        assert status == 503 and "connections" in answer["error"]["message"], answer
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while (status := exchange(s, b"GET /v1/models HTTP/1.1\r\nHost: x")[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == 200
