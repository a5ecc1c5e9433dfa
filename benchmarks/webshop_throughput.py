"""WebShop throughput: episodes per second of the in-process backend and of the HTTP backend (1 and 8 envs).

Every mode replays the same pre-planned episodes (the oracle's actions for validation seeds 0..N-1, planned before
timing, so planning cost is excluded) through ``WebShopGame``. The HTTP modes talk to ``agentgym-bench webshop-serve``
started as a separate process on a free loopback port; "8 envs" runs 8 games in 8 client threads sharing that one
server. The in-process backend is the baseline of the ratios. It also records the success rate and mean return of
the oracle and of two simple scripted shoppers on the whole test split under RAGEN's budgets (9 turns, 1 action).

    .venv/bin/python benchmarks/webshop_throughput.py [--episodes 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from agentgym_bench.agent import LLMAgentEnv, format_reply, oracle_reply
from agentgym_bench.envs.webshop.first_hit import NAVIGATION
from agentgym_bench.envs.webshop.game import WebShopGame
from agentgym_bench.seeds import TEST_SEEDS


def plan(seed: int) -> list[str]:
    """The oracle's actions for ``seed`` (a validation seed: a validation goal), one per turn."""
    game = WebShopGame()
    game.reset(seed=seed)
    actions = []
    while turn := game.oracle_turn(9 - len(actions), 9 - len(actions), 1):
        actions.append(turn[0])
        game.step(turn[0])
    return actions


def replay(game: WebShopGame, seeds: list[int], plans: dict[int, list[str]]) -> int:
    """Play the planned episodes; returns the number of steps taken."""
    steps = 0
    for seed in seeds:
        game.reset(seed=seed)
        for action in plans[seed]:
            game.step(action)
            steps += 1
    return steps


def timed(fn) -> tuple[float, int]:
    start = time.perf_counter()
    steps = fn()
    return time.perf_counter() - start, steps


def run_http(url: str, seeds: list[int], plans: dict[int, list[str]], workers: int) -> tuple[float, int]:
    games = [WebShopGame(backend="http", base_url=url) for _ in range(workers)]
    for game in games:  # create the server-side envs and open connections outside the timed region
        game.reset(seed=0)
    shards = [seeds[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        elapsed, steps = timed(lambda: sum(pool.map(lambda i: replay(games[i], shards[i], plans), range(workers))))
    for game in games:
        game.close()
    return elapsed, steps


def instruction_query(env: LLMAgentEnv) -> str:
    """The instruction without its options and price: what a literal-minded shopper would type."""
    text = env.game.backend.session.goal["instruction_text"]
    return text.split(" with ")[0].split(", and price")[0]


def first_result_reply(env: LLMAgentEnv, rng: np.random.Generator) -> str:
    """Search the instruction, open the first hit, buy it (no options)."""
    available = env.game.unwrapped._available
    if available["has_search_bar"]:
        return format_reply([f"search[{instruction_query(env)}]"])
    clicks = available["clickables"]
    if "buy now" in clicks:
        return format_reply(["click[buy now]"])
    products = [c for c in clicks if c not in NAVIGATION]
    return format_reply([f"click[{products[0] if products else clicks[0]}]"])


def random_reply(env: LLMAgentEnv, rng: np.random.Generator) -> str:
    """Search the instruction, then click uniformly at random among the page's clickables."""
    available = env.game.unwrapped._available
    if available["has_search_bar"]:
        return format_reply([f"search[{instruction_query(env)}]"])
    clicks = available["clickables"]
    return format_reply([f"click[{clicks[int(rng.integers(len(clicks)))]}]"])


def first_hit_reply(env: LLMAgentEnv, rng: np.random.Generator) -> str:
    """The first-hit shopper (``agentgym_bench/envs/webshop/first_hit.py``): the whole instruction, the first hit,
    the option values the instruction names, buy."""
    return format_reply(env.game.first_hit_turn(env.turns_left, env.actions_left, 1))


def policy_scores(policy) -> tuple[float, float]:
    """Success rate and mean return of ``policy`` on the 500 test goals under RAGEN's budgets."""
    env = LLMAgentEnv(WebShopGame(split="test"), max_turns=9, max_actions_per_turn=1, max_actions_per_episode=9)
    rng = np.random.default_rng(0)
    successes, total = 0, 0.0
    for seed in range(TEST_SEEDS.start, TEST_SEEDS.start + 500):  # the test goals refuse any other seed
        env.reset(seed=seed)
        done, ret = False, 0.0
        while not done:
            _, reward, done, _, info = env.step(policy(env, rng))
            ret += reward
        successes += info["success"]
        total += ret
    return successes / 500, total / 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode; the best is reported")
    args = parser.parse_args()
    seeds = list(range(args.episodes))
    plans = {seed: plan(seed) for seed in seeds}
    server = subprocess.Popen([sys.executable, "-m", "agentgym_bench.cli", "webshop-serve", "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+", server.stdout.readline()).group(0)
        local = WebShopGame()
        local.reset(seed=0)
        modes = {
            "in-process (local backend)": lambda: timed(lambda: replay(local, seeds, plans)),
            "HTTP, 1 env": lambda: run_http(url, seeds, plans, 1),
            "HTTP, 8 concurrent envs": lambda: run_http(url, seeds, plans, 8),
        }
        results = {}
        for name, fn in modes.items():
            best = min((fn() for _ in range(args.repeats)), key=lambda r: r[0])
            results[name] = best
    finally:
        server.kill()
        server.wait()
    base = args.episodes / results["in-process (local backend)"][0]
    print(f"{args.episodes} episodes ({sum(len(p) for p in plans.values())} steps), best of {args.repeats}\n")
    print("| mode | episodes/s | steps/s | ratio to in-process |")
    print("|---|---:|---:|---:|")
    for name, (elapsed, steps) in results.items():
        eps = args.episodes / elapsed
        print(f"| {name} | {eps:,.0f} | {steps / elapsed:,.0f} | {eps / base:.3f} |")
    print("\nscores on the test split (500 goals, 9 turns x 1 action; return includes format penalties)\n")
    print("| policy | success | mean return |")
    print("|---|---:|---:|")
    policies = {"oracle": lambda env, rng: oracle_reply(env), "search, first result, buy": first_result_reply,
                "search, then random clicks": random_reply, "the first-hit shopper": first_hit_reply}
    for name, policy in policies.items():
        success, mean = policy_scores(policy)
        print(f"| {name} | {success:.3f} | {mean:.4f} |")


if __name__ == "__main__":
    main()
