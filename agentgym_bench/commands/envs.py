"""``agentgym-bench envs``: list the registered environment ids, one line each."""

from __future__ import annotations

import argparse
import difflib

from agentgym_bench.errors import UserError
from agentgym_bench.registration import AGENT_ENVS, GAMES


def check_env_id(env_id: str) -> str:
    """``env_id`` if it is one of this package's agent env ids, else a :class:`UserError` listing them."""
    known = list(AGENT_ENVS)
    if env_id in known:
        return env_id
    close = difflib.get_close_matches(str(env_id), known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise UserError(f"unknown env id {env_id!r}: {hint}`agentgym-bench envs` lists them ({', '.join(known)})")


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
