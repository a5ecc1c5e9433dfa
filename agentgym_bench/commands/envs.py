"""``agentgym-bench envs``: list the registered environment ids, one line each."""

from __future__ import annotations

import argparse

from agentgym_bench.registration import AGENT_ENVS, GAMES


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--games", action="store_true", help="also list the bare core game ids (agentgym/...)")


def run(args: argparse.Namespace) -> int:
    width = max(len(k) for k in AGENT_ENVS)
    for env_id, spec in AGENT_ENVS.items():
        print(f"{env_id:<{width}}  {spec.description}")
    if args.games:
        for name, entry_point in GAMES.items():
            print(f"{'agentgym/' + name + '-v0':<{width}}  core game, one action word per step ({entry_point})")
    return 0
