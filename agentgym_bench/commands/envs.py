"""``agentgym-bench envs``: list the registered agent env ids, one line each (with ``--textarena`` the TextArena
games' too; an agent env of your own is given to the commands as ``MODULE:ID``, docs/core-env-contract.md)."""

from __future__ import annotations

import argparse

import gymnasium as gym

from agentgym_bench.multiagent.terminal import TWO_PLAYER_HINT
from agentgym_bench.registration import AGENT_ENVS, GAMES


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--games", action="store_true", help="also list the bare core game ids (agentgym/...)")
    parser.add_argument("--textarena", action="store_true",
                        help="also list the TextArena single-player games' agent ids (AgentTextArena/...)")


def run(args: argparse.Namespace) -> int:
    width = max(len(k) for k in AGENT_ENVS)
    for env_id, spec in AGENT_ENVS.items():
        print(f"{env_id:<{width}}  {spec.description}")
    if args.games:
        for name, entry_point in GAMES.items():
            print(f"{'agentgym/' + name + '-v0':<{width}}  core game, one action word per step ({entry_point})")
    textarena = sorted(k for k in gym.registry if k.startswith("AgentTextArena/"))
    if args.textarena:
        for env_id in textarena:
            print(f"{env_id}  TextArena game through the bridge (docs/multiagent.md); no oracle")
    elif textarena:
        print(f"(and {len(textarena)} TextArena games, AgentTextArena/...: `agentgym-bench envs --textarena` lists "
              "them)")
    print(f"(two-player, PettingZoo: {TWO_PLAYER_HINT}; `agentgym-bench play Bargain-v1` plays a seat)")
    return 0
