"""``agentgym-bench demo``: the oracle and a random agent play every env; success and return with 95% intervals.

Episodes are played on validation seeds ``0 .. N-1`` by :func:`agentgym_bench.benchmark.episodes.play_episodes`
(as the trainers' validation and the warm start's tables are) and scored by :mod:`agentgym_bench.stats`
(success: Wilson interval; return: normal interval of the mean), the same functions as the benchmark tables.
"""

from __future__ import annotations

import argparse

from agentgym_bench import stats
from agentgym_bench.benchmark.episodes import play_episodes
from agentgym_bench.errors import UserError
from agentgym_bench.registration import AGENT_ENVS, check_env_id
from agentgym_bench.rollout.engine import EnvGroups
from agentgym_bench.rollout.scripted import OraclePolicy, RandomPolicy


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=256,
                        help="episodes per env and agent (seeds 0..N-1) (default: %(default)s)")
    parser.add_argument("--env", action="append", default=None, metavar="ENV_ID",
                        help="env id to play (repeatable); default: every registered agent env")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent's own generator; the "
                        "episodes' seeds are 0..N-1 whatever it is (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    env_ids = [check_env_id(e) for e in args.env] if args.env else list(AGENT_ENVS)
    if args.episodes < 1:
        raise UserError(f"--episodes {args.episodes} must be >= 1")
    rows = []
    for name, policy in (("oracle", OraclePolicy()), ("random", RandomPolicy(args.seed))):
        with EnvGroups.validation(env_ids, [args.episodes] * len(env_ids)) as groups:
            played = play_episodes(groups, policy, progress=True, keyed=True)
        success = played.success
        for env_id in env_ids:
            rows.append((env_id, name, success[env_id],
                         stats.mean_interval([t.episode_reward for t in played.of(env_id)])))
    rows.sort(key=lambda r: env_ids.index(r[0]))
    width = max(len(r[0]) for r in rows)
    print(f"{'env':<{width}}  {'agent':<6}  {'success [95% CI]':<22}  {'return [95% CI]':<24}")
    for env_id, name, s, (r, low, high) in rows:
        print(f"{env_id:<{width}}  {name:<6}  {s.rate:.3f} [{s.low:.3f}, {s.high:.3f}]  "
              f"{r:>7.3f} [{low:.3f}, {high:.3f}]")
    print(f"({args.episodes} episodes each, validation seeds 0..{args.episodes - 1}; "
          "success: Wilson interval, return: normal interval of the mean)")
    return 0
