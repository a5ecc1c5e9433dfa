"""``agentgym-bench demo``: the oracle and a random agent play every env; success and return with 95% CIs."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from agentgym_bench.agent import oracle_reply, random_reply
from agentgym_bench.agent.env import LLMAgentEnv
from agentgym_bench.commands.envs import check_env_id
from agentgym_bench.registration import AGENT_ENVS

ReplyFn = Callable[[LLMAgentEnv], str]


def play_episode(env: gym.Env, reply_fn: ReplyFn, seed: int) -> tuple[float, bool]:
    """Play one episode with ``reply_fn`` writing each reply; return (episode return, success)."""
    env.reset(seed=seed)
    total, info = 0.0, {"success": False}
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(reply_fn(env.unwrapped))
        total += reward
    return total, bool(info["success"])


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its normal-approximation 95% confidence interval."""
    x = np.asarray(values, dtype=float)
    half = 1.96 * x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
    return float(x.mean()), float(half)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=256, help="episodes per env and agent (seeds 0..N-1)")
    parser.add_argument("--env", action="append", default=None, metavar="ENV_ID",
                        help="env id to play (repeatable); default: every registered agent env")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent's own generator")


def run(args: argparse.Namespace) -> int:
    env_ids = [check_env_id(env_id) for env_id in args.env or AGENT_ENVS]
    rng = np.random.default_rng(args.seed)
    agents: dict[str, ReplyFn] = {
        "oracle": oracle_reply,
        "random": lambda env: random_reply(env, rng, max_actions=env.max_actions_per_turn),
    }
    rows = []
    for env_id in env_ids:
        env = gym.make(env_id)
        for name, reply_fn in agents.items():
            results = [play_episode(env, reply_fn, seed)
                       for seed in tqdm(range(args.episodes), desc=f"{env_id} {name}", leave=False, disable=None)]
            success = mean_ci([float(s) for _, s in results])
            ret = mean_ci([r for r, _ in results])
            rows.append((env_id, name, success, ret))
        env.close()
    width = max(len(r[0]) for r in rows)
    print(f"{'env':<{width}}  {'agent':<6}  {'success (95% CI)':>18}  {'return (95% CI)':>18}")
    for env_id, name, (s, sh), (r, rh) in rows:
        print(f"{env_id:<{width}}  {name:<6}  {s:>9.3f} ± {sh:<6.3f}  {r:>9.3f} ± {rh:<6.3f}")
    print(f"({args.episodes} episodes each, seeds 0..{args.episodes - 1})")
    return 0
