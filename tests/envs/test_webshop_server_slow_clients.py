"""``webshop-serve`` while one local client holds 1,000 slow, reconnecting connections (issue 62): a normal
client's episode steps are all answered, promptly."""

from __future__ import annotations

import dataclasses
import time

from agentgym_bench.envs.webshop.client import WebShopClient
from agentgym_bench.envs.webshop.server import LIMITS, serve_in_thread
from tests.slow_clients import SlowClients, affordable


def test_a_normal_client_plays_while_another_holds_1000_slow_reconnecting_connections():
    """1,000 connections (fewer only where the open-files limit cannot hold 2,000 descriptors and some), each
    sending its head a byte a second, cut at the 2 s head deadline and reopened; meanwhile a client without retries
    creates an env, resets it and takes 20 steps, each answered within 5 s."""
    count = affordable(1000)
    assert count >= 500, f"the open-files limit allows only {count} connections"
    with serve_in_thread(host="127.0.0.1", port=0,
                         limits=dataclasses.replace(LIMITS, head_seconds=2.0, idle_seconds=2.0)) as srv:
        with SlowClients(srv.server_address[1], count, interval=1.0, seconds=20.0) as slow:
            slow.wait_open(count, timeout=10)
            client = WebShopClient(srv.url, retries=0)
            latencies = []
            started = time.monotonic()
            env = client.create()
            client.reset(env, 0)
            latencies.append(time.monotonic() - started)
            for k in range(20):
                started = time.monotonic()
                client.step(env, "search[shirt]" if k % 2 == 0 else "click[< prev]")
                latencies.append(time.monotonic() - started)
            assert client.close_env(env)
            client.close()
            cut_by = time.monotonic() + 10
            while not (slow.cut and slow.connects > count) and time.monotonic() < cut_by:
                time.sleep(0.1)
            held, connects, cut = slow.most_open, slow.connects, slow.cut
    print(f"\n{count} slow connections ({held} at once, {connects} opened, {cut} cut at the head deadline): "
          f"21 answers, slowest {max(latencies):.2f} s")
    assert max(latencies) < 5
    assert held >= count and connects > count and cut > 0
