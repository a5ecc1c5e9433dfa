"""``webshop-serve`` against a hostile client on loopback (issue 51): bad numbers and shapes are a 422, never a 500
or a dropped connection; bodies are bounded in size and time; forgotten envs expire."""

import dataclasses
import json
import socket
import time

import pytest

from agentgym_bench.envs.webshop.client import WebShopClient
from agentgym_bench.envs.webshop.server import LIMITS, serve_in_thread
from agentgym_bench.http_body import ServerLimits
from tests.raw_http import raw_exchange


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(host="127.0.0.1", port=0, limits=dataclasses.replace(LIMITS, body_seconds=1.0)) as srv:
        yield srv


def exchange(server, request: bytes, wait: float = 0.0) -> tuple[int, dict]:
    """Send raw bytes, read the whole answer within 20 s: (status, JSON body)."""
    return raw_exchange(server.server_address[1], request, wait)


def post(server, path: str, body: bytes, length: str | None = None) -> tuple[int, dict]:
    length = str(len(body)) if length is None else length
    return exchange(server, f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: ".encode() + length.encode("utf-8")
                    + b"\r\n\r\n" + body)


@pytest.mark.parametrize("env_idx", ["--5", "%C2%B2", "%EF%BC%95", "5.0", "", "9" * 40, "0x5"])
def test_a_query_env_idx_that_is_not_an_integer_is_a_422(server, env_idx):
    status, answer = exchange(server, f"GET /observation?env_idx={env_idx} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert status == 422 and "env_idx must be an integer" in answer["detail"]


@pytest.mark.parametrize("body, detail", [
    (b'{"env_idx": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests arrays and objects too deeply"),
    (b'{"env_idx": ' + b"9" * 5000 + b"}", "not JSON"),
    (b'{"env_idx": 1e999, "action": "search[x]"}', "env_idx must be an integer"),
    (b'{"env_idx": NaN}', "env_idx must be an integer"),
])
def test_bad_bodies_are_a_422(server, body, detail):
    status, answer = post(server, "/step", body)
    assert status == 422 and detail in answer["detail"], answer


@pytest.mark.parametrize("length, status", [("\u00b2", 400), ("-5", 400), ("abc", 400), (str(50 * 10**6), 413)])
def test_bad_or_huge_content_lengths_are_answered(server, length, status):
    """A ``Content-Length`` that is not a byte count is refused by the HTTP parser (h11) before the app sees it: a
    400, as AgentGym's own server (FastAPI on uvicorn) answers it; one over the limit is a 413 from the app."""
    status_got, answer = post(server, "/step", b"", length=length)
    assert status_got == status and "detail" in answer


def test_a_half_sent_body_is_a_408(server):
    started = time.monotonic()
    status, answer = exchange(server, b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", wait=0.1)
    assert status == 408 and "did not arrive within 1 s" in answer["detail"]
    assert 0.9 < time.monotonic() - started < 10
    assert WebShopClient(server.url).ping()


def test_envs_unused_for_their_ttl_are_dropped():
    with serve_in_thread(host="127.0.0.1", port=0, env_ttl=0.5) as srv:
        client = WebShopClient(srv.url)
        old = client.create()
        time.sleep(0.7)
        fresh = client.create()  # creating sweeps: the old env is gone, the new one stays
        assert exchange(srv, b"GET /list_envs HTTP/1.1\r\nHost: x\r\n\r\n") == (200, [fresh])
        assert post(srv, "/step", json.dumps({"env_idx": old, "action": "search[x]"}).encode())[0] == 404


def test_a_request_head_sent_byte_by_byte_is_cut_off_at_the_head_deadline():
    """A slow-header client (one byte every 0.2 s, never ending its head) holds its thread no longer than the head
    deadline (1 s here), although every single read is well within the socket timeout."""
    from tests.serving.test_serve_abuse import closed_within

    with serve_in_thread(host="127.0.0.1", port=0, limits=dataclasses.replace(LIMITS, head_seconds=1.0)) as srv:
        assert closed_within(srv.server_address[1], 10, drip=b"GET /list_envs HTTP/1.1\r\nX-Slow: " + b"a" * 1000) < 4
        assert WebShopClient(srv.url).ping()


def test_connections_over_the_cap_get_a_503_and_later_ones_are_served():
    with serve_in_thread(host="127.0.0.1", port=0, limits=dataclasses.replace(LIMITS, max_connections=2)) as srv:
        held = [socket.create_connection(("127.0.0.1", srv.server_address[1])) for _ in range(2)]
        time.sleep(0.5)
        status, answer = exchange(srv, b"GET /list_envs HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 503 and "--max-connections" in answer["detail"], answer
        for sock in held:
            sock.close()
        assert WebShopClient(srv.url, retries=5).create() == 0  # the client retries a 503


def test_its_limits_differ_from_serves_only_in_the_write_deadline_and_the_request_cap():
    """``webshop-serve``'s :data:`LIMITS` keep the values its constants had: ServerLimits' defaults but for two."""
    default = ServerLimits()
    assert {field.name: getattr(LIMITS, field.name) for field in dataclasses.fields(ServerLimits)
            if getattr(LIMITS, field.name) != getattr(default, field.name)} == {"write_seconds": 30.0,
                                                                                  "max_requests": 1024}
