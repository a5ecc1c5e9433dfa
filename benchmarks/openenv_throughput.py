"""OpenEnv server throughput: episodes/s with 1, 8 and 64 concurrent sessions on loopback vs the in-process env.

The server is ``agentgym-bench openenv-serve AgentFrozenLake-v0 --max-sessions 64`` in its own process (as a user
runs it; uvicorn, one worker). Clients are :class:`agentgym_bench.adapters.openenv.AgentEnvClient` (OpenEnv's async
WebSocket ``EnvClient``) in this process, ``C`` sessions at once on one asyncio loop: every session connects first
(so all ``C`` are open together), then each plays its share of the episodes back to back. The baseline plays the
same episodes with ``gym.make("AgentFrozenLake-v0")`` in this process.

Episodes: ``AgentFrozenLake-v0`` with the compact prompt, episode ``i`` reset with seed ``i``, each turn a reply of
1-2 random moves drawn from ``random.Random(i)`` (the same replies on every side), played to the end (5 turns at
most). No model runs: this measures what the transport adds per env step. Every error is counted; the run fails if
any occurs. Wall time includes opening the sessions. Each measurement also records this process's CPU time and
the server process's (``/proc``), per episode: on a shared machine wall time is noisy, CPU time shows where the
work goes.

Run (needs ``pip install 'agentgym-bench[openenv]'``)::

    python benchmarks/openenv_throughput.py [--episodes 256] [--rounds 3] [--port 8765]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ENV_ID = "AgentFrozenLake-v0"
ENV_KWARGS = {"prompt": "compact"}
MOVES = ("Up", "Down", "Left", "Right")
CONCURRENCY = (1, 8, 64)


def replies_for(seed: int, turns: int = 5) -> list[str]:
    rng = random.Random(seed)
    return ["<think></think><answer>" + " || ".join(rng.choice(MOVES) for _ in range(rng.randint(1, 2)))
            + "</answer>" for _ in range(turns)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(run, server_pid: int) -> dict[str, float]:
    """``run()``'s result plus this process's and the server's CPU seconds over it (the machine may be shared, so
    CPU time says where the work goes when wall time is noisy)."""
    client0, server0 = time.process_time(), cpu_seconds(server_pid)
    result = run()
    result["client_cpu"] = time.process_time() - client0
    result["server_cpu"] = cpu_seconds(server_pid) - server0
    return result


def in_process(episodes: int) -> dict[str, float]:
    import gymnasium as gym

    import agentgym_bench  # noqa: F401

    env = gym.make(ENV_ID, **ENV_KWARGS)
    steps, start = 0, time.perf_counter()
    for i in range(episodes):
        env.reset(seed=i)
        for reply in replies_for(i):
            steps += 1
            *_, terminated, truncated, _ = env.step(reply)
            if terminated or truncated:
                break
    return {"seconds": time.perf_counter() - start, "episodes": episodes, "steps": steps, "errors": 0}


async def over_openenv(url: str, episodes: int, sessions: int) -> dict[str, float]:
    from agentgym_bench.adapters.openenv import AgentEnvClient

    clients = [AgentEnvClient(url, message_timeout_s=120) for _ in range(sessions)]
    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(c.connect() for c in clients)), 120)  # all sessions open at once
    counts = {"steps": 0, "errors": 0}

    async def play(k: int, client) -> None:
        for i in range(k, episodes, sessions):
            try:
                result = await client.reset(seed=i)
                for reply in replies_for(i):
                    result = await client.step(reply)
                    counts["steps"] += 1
                    if result.done:
                        break
            except Exception as e:  # counted and reported; the run fails on any
                counts["errors"] += 1
                print(f"  error in episode {i}: {e}", file=sys.stderr)

    await asyncio.wait_for(asyncio.gather(*(play(k, c) for k, c in enumerate(clients))), 600)
    seconds = time.perf_counter() - start
    await asyncio.gather(*(c.close() for c in clients))
    return {"seconds": seconds, "episodes": episodes, "steps": counts["steps"], "errors": counts["errors"]}


def start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "agentgym_bench.cli", "openenv-serve", ENV_ID, "--port", str(port),
                             "--max-sessions", str(max(CONCURRENCY)), "--env-kwargs", json.dumps(ENV_KWARGS)],
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("the server did not answer /health within 180 s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=256, help="episodes per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=0, help="server port (0: a free one)")
    args = parser.parse_args()
    port = args.port or free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port)
    results: dict[str, list[dict[str, float]]] = {"in-process": []} | {f"openenv x{c}": [] for c in CONCURRENCY}
    try:
        for r in range(args.rounds):
            results["in-process"].append(measured(lambda: in_process(args.episodes), server.pid))
            for c in CONCURRENCY:
                results[f"openenv x{c}"].append(measured(
                    lambda c=c: asyncio.run(over_openenv(url, args.episodes, c)), server.pid))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]['episodes'] / v[-1]['seconds']:.1f} ep/s"
                                                 for k, v in results.items()), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    base = statistics.median(m["episodes"] / m["seconds"] for m in results["in-process"])
    print(f"\n{args.episodes} episodes per measurement, {args.rounds} rounds, medians:")
    print(f"{'side':<14} {'episodes/s':>11} {'steps/s':>9} {'vs in-process':>14} {'client CPU ms/ep':>17} "
          f"{'server CPU ms/ep':>17} {'errors':>7}")
    errors = 0
    for name, runs in results.items():
        eps = statistics.median(m["episodes"] / m["seconds"] for m in runs)
        sps = statistics.median(m["steps"] / m["seconds"] for m in runs)
        client = statistics.median(1000 * m["client_cpu"] / m["episodes"] for m in runs)
        server_cpu = statistics.median(1000 * m["server_cpu"] / m["episodes"] for m in runs)
        errors += sum(int(m["errors"]) for m in runs)
        print(f"{name:<14} {eps:>11.1f} {sps:>9.1f} {eps / base:>13.3f}x {client:>17.2f} {server_cpu:>17.2f} "
              f"{sum(int(m['errors']) for m in runs):>7}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
