"""Oracle and random-agent success on Bandit and FrozenLake, seeds 0..255 (the table in docs/oracles.md).

Run:  .venv/bin/python benchmarks/oracle_rates.py [--seeds 256]

Each row plays the core game under the agent budgets with a small local loop (turns of up to k actions, at most
``max_actions`` in all, a turn stops early when the game ends) and, for the oracle, also through the registered
agent env (``gym.make("AgentFrozenLake-v0", ...)`` + ``oracle_reply``) as a cross-check of the two paths.
Agents: the oracle; ``random-1``, one uniformly random valid action a turn; ``random-k``, 1..k uniformly random
valid actions a turn (k = the per-turn limit; the length is uniform too). The random agents draw from
``np.random.default_rng([seed, 1])``, independent of the env's generator. ``exact`` is the mean over the seeds of
the oracle's computed success probability at reset (no sampling noise from slips). Success intervals: 95% Wilson
(:mod:`agentgym_bench.stats`, as everywhere in the package).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench import stats
from agentgym_bench.agent import oracle_reply
from agentgym_bench.envs.bandit import BanditGame
from agentgym_bench.envs.frozen_lake import FrozenLakeGame

SETTINGS = [
    # (label, game factory, agent id, turns, per turn, max actions, extra make kwargs)
    ("Bandit Phoenix/Dragon, 1 turn x 1 action", BanditGame, "AgentBandit-v0", 1, 1, 1, {}),
    ("FrozenLake 4x4 slippery, 5 turns x <=5, <=10 actions (RAGEN)", FrozenLakeGame, "AgentFrozenLake-v0", 5, 5, 10,
     {}),
    ("FrozenLake 4x4 slippery, 5 turns x <=2, <=10 actions", FrozenLakeGame, "AgentFrozenLake-v0", 5, 2, 10,
     {"max_actions_per_turn": 2}),
    ("FrozenLake 4x4 not slippery, 5 turns x <=5, <=10 actions", lambda: FrozenLakeGame(is_slippery=False),
     "AgentFrozenLakeNoSlip-v0", 5, 5, 10, {}),
]


def oracle(env, info, rng, turns_left, actions_left, per_turn):
    return env.oracle_turn(turns_left, actions_left, per_turn)


def random_agent(longest):
    def policy(env, info, rng, turns_left, actions_left, per_turn):
        valid = info["valid_actions"]
        n = int(rng.integers(1, min(longest, per_turn, actions_left) + 1))
        return [valid[i] for i in rng.integers(0, len(valid), size=n)]

    return policy


def play(env, seed, policy, turns, per_turn, max_actions):
    """One episode under the agent budgets; returns (success, return)."""
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng([seed, 1])
    left, total, terminated = max_actions, 0.0, False
    for turn in range(turns):
        if left == 0 or terminated:
            break
        for action in policy(env, info, rng, turns - turn, left, per_turn):
            _, reward, terminated, _, info = env.step(action)
            left, total = left - 1, total + reward
            if terminated:
                break
    return info["success"], total


def play_agent_env(env_id, seed, make_kwargs):
    """The oracle through the LLM-agent wrapper; returns (success, return of game rewards)."""
    env = gym.make(env_id, **make_kwargs).unwrapped
    env.reset(seed=seed)
    total, done, info = 0.0, False, {}
    while not done:
        _, reward, done, _, info = env.step(oracle_reply(env))
        total += reward
    return info["success"], total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=256)
    args = parser.parse_args()
    seeds = range(args.seeds)
    print(f"seeds 0..{args.seeds - 1}\n")
    print("| setting | agent | success | mean return | exact |")
    print("|---|---|---|---|---|")
    timing = []
    for label, factory, env_id, turns, per_turn, max_actions, make_kwargs in SETTINGS:
        env = factory()
        for name, policy in (("oracle", oracle), ("random-1", random_agent(1)), ("random-k", random_agent(per_turn))):
            if name == "random-k" and per_turn == 1:
                continue
            start = time.perf_counter()
            results = [play(env, s, policy, turns, per_turn, max_actions) for s in seeds]
            elapsed = (time.perf_counter() - start) / len(seeds)
            success = stats.success_rate([r[0] for r in results])
            returns = np.mean([r[1] for r in results])
            exact = ""
            if name == "oracle" and isinstance(env, FrozenLakeGame):
                values = []
                for s in seeds:
                    env.reset(seed=s)
                    values.append(env.oracle_value(turns, max_actions, per_turn))
                exact = f"{np.mean(values):.3f}"
            if name == "oracle":
                wrapped = [play_agent_env(env_id, s, make_kwargs) for s in seeds]
                assert wrapped == results, f"{label}: the agent env disagrees with the local loop"
            print(f"| {label} | {name} | {success.rate:.3f} [{success.low:.3f}, {success.high:.3f}] | {returns:.3f} "
                  f"| {exact} |")
            timing.append((label, name, elapsed * 1000))
    print("\nmilliseconds per episode (local loop, this machine):\n")
    print("| setting | agent | ms/episode |")
    print("|---|---|---|")
    for label, name, ms in timing:
        print(f"| {label} | {name} | {ms:.2f} |")


if __name__ == "__main__":
    main()
