"""``webshop-serve``'s idle deadline on loopback (issue 51): silent connections give their slot back after the idle
deadline instead of the 600 s socket timeout, and a client that keeps its connection between steps reconnects."""

from __future__ import annotations

import dataclasses
import socket
import time

from agentgym_bench.envs.webshop.client import WebShopClient
from agentgym_bench.envs.webshop.server import LIMITS, serve_in_thread
from tests.envs.test_webshop_server_abuse import exchange

LIST = b"GET /list_envs HTTP/1.1\r\nHost: x\r\n\r\n"


def test_silent_connections_are_dropped_at_the_idle_deadline_and_free_the_cap():
    """The cap's worth of silent connections: a 503 while they hold the slots, served once the 1 s idle deadline
    has closed them (the handler's socket timeout is 600 s)."""
    with serve_in_thread(host="127.0.0.1", port=0,
                         limits=dataclasses.replace(LIMITS, max_connections=3, idle_seconds=1.0)) as srv:
        port = srv.server_address[1]
        silent = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        opened = time.monotonic()
        time.sleep(0.3)
        assert exchange(srv, LIST)[0] == 503
        while exchange(srv, LIST)[0] == 503 and time.monotonic() - opened < 10:
            time.sleep(0.1)
        assert time.monotonic() - opened < 4
        assert all(sock.recv(1) == b"" for sock in silent)  # closed by the server, unanswered
        for sock in silent:
            sock.close()


def test_a_client_that_thinks_longer_than_the_idle_deadline_between_steps_reconnects():
    """``WebShopClient`` keeps one connection; an agent that takes longer than the idle deadline between two steps
    finds it closed and the request goes out again on a new one (the server never read it), once."""
    with serve_in_thread(host="127.0.0.1", port=0, limits=dataclasses.replace(LIMITS, idle_seconds=0.5)) as srv:
        client = WebShopClient(srv.url, retries=0)
        env = client.create()
        client.reset(env, 0)
        time.sleep(1.0)
        observation, _, done = client.step(env, "search[shirt]")
        assert not done and "Back to Search" in observation
        time.sleep(1.0)
        assert client.close_env(env)
