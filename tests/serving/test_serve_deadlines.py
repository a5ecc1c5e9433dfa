"""``agentgym-bench serve``'s connection deadlines on loopback (issue 51): silent connections give their slot back
after the idle deadline, a slow but honest client is still served, and a client that stops reading its answer
(streamed) is cut off at the write deadline, so neither holds the connection cap for long."""

from __future__ import annotations

import json
import socket
import time

from agentgym_bench.http_body import ServerLimits
from agentgym_bench.serving.chat import ChatServer
from tests.rollout.test_hf import conversations
from tests.serving.test_serve_abuse import exchange

MODELS = b"GET /v1/models HTTP/1.1\r\nHost: x"


def served_within(server: ChatServer, seconds: float) -> float:
    """Seconds until ``GET /v1/models`` is answered 200 (503s retried every 0.1 s); ``inf`` past ``seconds``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if exchange(server, MODELS)[0] == 200:
            return time.monotonic() - started
        time.sleep(0.1)
    return float("inf")


def test_silent_connections_are_dropped_at_the_idle_deadline_and_free_the_cap(model_and_tokenizer):
    """The cap's worth of connections that send nothing: a request gets a 503 while they hold the slots, and is
    served once the idle deadline (1 s here) has closed them."""
    model, tokenizer = model_and_tokenizer
    limits = ServerLimits(max_connections=3, idle_seconds=1.0)
    with ChatServer(model, tokenizer, model_name="tiny", limits=limits) as s:
        port = s.server_address[1]
        silent = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        opened = time.monotonic()
        time.sleep(0.3)
        assert exchange(s, MODELS)[0] == 503  # the cap is full
        assert served_within(s, 10) < 4
        assert all(sock.recv(1) == b"" for sock in silent)  # closed by the server, unanswered
        assert time.monotonic() - opened < 6
        for sock in silent:
            sock.close()


def test_a_slow_but_honest_client_is_served_and_may_keep_its_connection(model_and_tokenizer):
    """A client that waits 0.6 s before its first byte and sends its head over 0.6 s more (longer in all than the 1 s
    idle deadline, but each request begun in time) is served, twice on one kept-alive connection."""
    model, tokenizer = model_and_tokenizer
    with ChatServer(model, tokenizer, model_name="tiny", limits=ServerLimits(idle_seconds=1.0, head_seconds=5.0)) as s:
        with socket.create_connection(("127.0.0.1", s.server_address[1]), timeout=10) as sock:
            for _ in range(2):
                time.sleep(0.6)
                request = MODELS + b"\r\n\r\n"
                for k in range(0, len(request), 8):
                    sock.sendall(request[k:k + 8])
                    time.sleep(0.6 / (len(request) / 8))
                answer = b""
                while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                    chunk = sock.recv(65536)
                    assert chunk, f"closed before the whole answer: {answer!r}"
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
                assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["data"][0]["id"] == "tiny"


def small_buffers(server: ChatServer) -> ChatServer:
    """The server side of a slow network: a 4 KiB send buffer (set on the listening socket, which the connections it
    accepts inherit), so a client that does not read fills the server's buffers after some kilobytes instead of the
    megabytes loopback buffers hold."""
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    return server


def _stalled_stream(port: int, trickle: bool) -> tuple[socket.socket, float]:
    """Ask for a streamed answer of some 70 KB (4 choices of 100 tokens with log-probabilities), wait for its first
    bytes, then read no more (``trickle``: 512 bytes every 0.1 s). The socket and when the client stalled."""
    body = json.dumps({"model": "tiny", "messages": conversations(1)[0], "n": 4, "max_tokens": 100, "logprobs": True,
                       "stream": True, "temperature": 0}).encode()
    for _ in range(50):  # a 503 while the previous client's connection is still closing
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(30)
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                     + body)
        if (head := sock.recv(512)).startswith(b"HTTP/1.1 200"):
            return sock, time.monotonic()
        assert head.startswith(b"HTTP/1.1 503"), head
        sock.close()
        time.sleep(0.1)
    raise AssertionError("the server stayed busy")


def test_a_client_that_stops_reading_its_streamed_answer_is_cut_off_at_the_write_deadline(model_and_tokenizer):
    """With one connection allowed, a client that stops reading a streamed answer (or reads it a trickle at a time,
    each write then ending quickly) holds the only connection until the write deadline
    (1 s here); then the connection is closed before ``[DONE]`` and another client is served."""
    model, tokenizer = model_and_tokenizer
    limits = ServerLimits(max_connections=1, write_seconds=1.0)
    with small_buffers(ChatServer(model, tokenizer, model_name="tiny", limits=limits)) as s:
        for trickle in (False, True):
            sock, stalled = _stalled_stream(s.server_address[1], trickle)
            with sock:
                received = b""
                if trickle:
                    while time.monotonic() - stalled < 5 and (chunk := sock.recv(512)):
                        received += chunk
                        time.sleep(0.1)
                freed = served_within(s, 10) + time.monotonic() - stalled
                assert freed < 6, f"the stalled client held the connection {freed:.1f} s (trickle={trickle})"
                sock.settimeout(5)
                try:
                    while chunk := sock.recv(65536):
                        received += chunk
                except ConnectionResetError:
                    pass
                assert b"[DONE]" not in received  # the answer was cut off, not finished
