"""One :class:`~agentgym_bench.http_body.ServerLimits` for the servers (issue 61): its defaults are the values the
servers had as constants, ``serve`` enforces the limits of the object it is given (a real server on loopback, with
limits small enough to go over at once), and the command lines fill the object from their flags. ``openenv-serve``'s
sessions, idle TTL and message size are enforced from the object given to ``make_app`` in
tests/adapters/test_openenv.py; ``serve``'s deadlines and connection cap in test_serve_deadlines.py and
test_serve_abuse.py."""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import time

import pytest

from agentgym_bench.agent.env import MAX_REPLY_LENGTH
from agentgym_bench.cli import main
from agentgym_bench.errors import UserError
from agentgym_bench.http_body import ServerLimits
from agentgym_bench.serving.chat import ChatServer
from tests.serving.test_serve_abuse import exchange

FORMER_CONSTANTS = {
    "max_head_bytes": 16 * 1024,  # http_body.MAX_HEAD_BYTES
    "head_seconds": 10.0,  # serve.HEAD_SECONDS
    "idle_seconds": 10.0,  # serve.IDLE_SECONDS
    "max_body_bytes": 1 << 20,  # serve.MAX_BODY_BYTES
    "body_seconds": 30.0,  # serve.BODY_SECONDS
    "write_seconds": 60.0,  # serve.WRITE_SECONDS
    "max_connections": 4096,  # serve.MAX_CONNECTIONS
    "max_requests": 64,  # serve.MAX_REQUESTS
    "backlog": 2048,  # http_body.BACKLOG
    "max_json_depth": 64,  # serve.MAX_DEPTH
    "responses_kept": 256,  # serve_responses.RESPONSES_KEPT
    "max_sessions": 64,  # openenv_serve.DEFAULT_MAX_SESSIONS
    "session_ttl": 600.0,  # openenv_serve.DEFAULT_SESSION_TTL
    "ws_max_bytes": 4 * MAX_REPLY_LENGTH,  # openenv_serve: uvicorn.run(ws_max_size=4 * MAX_REPLY_LENGTH)
}
"""Every limit and the value the servers had for it before ServerLimits."""
SMALL = ServerLimits(max_body_bytes=512, body_seconds=2.0, max_json_depth=4, max_head_bytes=1024, max_requests=1,
                     responses_kept=1)
CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
"""A chat request of some 80 bytes and 3 levels."""


def test_the_defaults_are_the_former_constants():
    assert dataclasses.asdict(ServerLimits()) == FORMER_CONSTANTS
    assert ServerLimits(session_ttl=None).session_ttl is None  # None: no TTL


@pytest.mark.parametrize("field, value", [("max_body_bytes", 0), ("max_requests", True), ("head_seconds", 0),
                                          ("write_seconds", float("inf")), ("max_sessions", 1.5),
                                          ("session_ttl", -1)])
def test_a_bad_limit_is_refused_when_the_object_is_made(field, value):
    with pytest.raises(ValueError, match=f"{field}="):
        ServerLimits(**{field: value})
    with pytest.raises(UserError, match=f"--{field.replace('_', '-')} {value}: {field}="):
        ServerLimits().with_flags(**{field: value})


@pytest.mark.parametrize("argv, message", [
    (["serve", "--max-connections", "0"], "--max-connections 0: max_connections=0 must be a positive integer"),
    (["serve", "--max-requests", "-3"], "--max-requests -3: max_requests=-3 must be a positive integer"),
    (["openenv-serve", "--session-ttl", "-1"], "--session-ttl -1.0: session_ttl=-1.0 must be a positive number"),
])
def test_the_command_lines_fill_the_limits_from_their_flags(argv, message, capsys):
    """A flag's value goes into the command's ServerLimits, which refuses a bad one in one line (before the model
    or OpenEnv loads)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentgym-bench: error: ") and message in err and err.count("\n") == 1


@pytest.fixture(scope="module")
def server(model_and_tokenizer):
    with ChatServer(*model_and_tokenizer, model_name="tiny", limits=SMALL) as s:
        yield s


def call(server, method: str, path: str, payload: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    try:
        conn.request(method, path, body=None if payload is None else json.dumps(payload),
                     headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_serve_runs_uvicorn_with_the_limits_it_is_given(server):
    assert server.limits is SMALL
    assert server.config.h11_max_incomplete_event_size == 1024 and server.config.backlog == SMALL.backlog
    assert server.config.timeout_keep_alive == SMALL.idle_seconds
    assert server.responses.size == 1


def test_serve_refuses_a_body_over_the_size_it_is_given(server):
    assert call(server, "POST", "/v1/chat/completions", CHAT)[0] == 200
    status, answer = call(server, "POST", "/v1/chat/completions", {**CHAT, "pad": "x" * 500})
    assert status == 413 and "the body must be at most 512 bytes" in answer["error"]["message"], answer
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 513"
    assert exchange(server, head)[0] == 413  # refused by its Content-Length, before the body


def test_serve_refuses_a_body_nested_deeper_than_it_is_given(server):
    deep = {**CHAT, "messages": [{"role": "user", "content": "hi", "x": [[1]]}]}  # 5 levels
    status, answer = call(server, "POST", "/v1/chat/completions", deep)
    assert status == 400 and "(more than 4 levels)" in answer["error"]["message"], answer


def test_serve_refuses_a_request_head_over_the_bytes_it_is_given(server):
    """2 KiB of a head not yet ended: over the 1 KiB given (the default, 16 KiB, would wait for the rest), a 400 in
    OpenAI's shape at once, then the connection closes."""
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 2048)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 400"), data[:200]
    assert "malformed HTTP request" in json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]["message"]


def test_serve_answers_a_503_over_the_requests_it_is_given_and_a_408_after_its_body_deadline(server):
    """One request is being read (its body half sent): with ``max_requests=1`` another gets a 503; the held one
    gets a 408 at the 2 s body deadline given, and then the next request is served."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=20) as held:
        held.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        while server.requests == 0 and time.monotonic() - started < 10:
            time.sleep(0.02)
        status, answer = call(server, "GET", "/v1/models")
        assert status == 503 and "1 requests are being served" in answer["error"]["message"], answer
        data = b""
        while chunk := held.recv(65536):  # the 408 closes the connection
            data += chunk
    assert data.startswith(b"HTTP/1.1 408"), data[:200]
    assert "did not arrive within 2 s" in json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]["message"]
    assert 1.9 < time.monotonic() - started < 10
    assert call(server, "GET", "/v1/models")[0] == 200


def test_serve_keeps_as_many_stored_responses_as_it_is_given(server):
    request = {"model": "tiny", "input": "hi", "max_output_tokens": 1}
    first, second = (call(server, "POST", "/v1/responses", request)[1]["id"] for _ in range(2))
    assert call(server, "GET", f"/v1/responses/{second}")[0] == 200
    status, answer = call(server, "GET", f"/v1/responses/{first}")
    assert status == 404 and answer["error"]["code"] == "not_found", answer
