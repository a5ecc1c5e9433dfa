"""``serve`` while one local client holds 1,000 slow, reconnecting connections (issue 62): a normal client's
requests are all answered, promptly. (On ``http.server``, one thread a connection and 64 of them, 80 such
connections kept the server full and a normal client got 503 for 87 of its 88 requests.)"""

from __future__ import annotations

import http.client
import json
import time

from agentgym_bench.http_body import ServerLimits
from agentgym_bench.serving.chat import ChatServer
from tests.rollout.test_hf import conversations
from tests.slow_clients import SlowClients, affordable


def request(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, float]:
    """One request on a new connection: (status, seconds until the whole answer was read)."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status, time.monotonic() - started
    finally:
        conn.close()


def test_a_normal_client_is_served_while_another_holds_1000_slow_reconnecting_connections(model_and_tokenizer):
    """1,000 connections (fewer only where the open-files limit cannot hold 2,000 descriptors and some), each
    sending its head a byte a second; the head deadline is 2 s here so that they are cut and reconnect during
    the test. Meanwhile 20 ``GET /v1/models`` and 4 chat completions are all answered 200, each within 5 s."""
    model, tokenizer = model_and_tokenizer
    count = affordable(1000)
    assert count >= 500, f"the open-files limit allows only {count} connections"
    limits = ServerLimits(head_seconds=2.0, idle_seconds=2.0)
    with ChatServer(model, tokenizer, model_name="tiny", limits=limits) as server:
        port = server.server_address[1]
        with SlowClients(port, count, interval=1.0, seconds=20.0) as slow:
            slow.wait_open(count, timeout=10)
            answers = [request(port, "GET", "/v1/models") for _ in range(20)]
            chat = {"model": "tiny", "messages": conversations(1)[0], "max_tokens": 2}
            answers += [request(port, "POST", "/v1/chat/completions", chat) for _ in range(4)]
            cut_by = time.monotonic() + 10  # the head deadline cuts them and they reconnect
            while not (slow.cut and slow.connects > count) and time.monotonic() < cut_by:
                time.sleep(0.1)
            held, connects, cut = slow.most_open, slow.connects, slow.cut
    statuses, latencies = [s for s, _ in answers], [t for _, t in answers]
    print(f"\n{count} slow connections ({held} at once, {connects} opened, {cut} cut at the head deadline): "
          f"{statuses.count(200)}/{len(statuses)} answered 200, slowest {max(latencies):.2f} s, "
          f"median {sorted(latencies)[len(latencies) // 2]:.3f} s")
    assert statuses == [200] * len(answers)
    assert max(latencies) < 5
    assert held >= count and connects > count and cut > 0  # all held at once, and cut and reopened
