"""``agentgym-bench openenv-serve``: serve agent envs as OpenEnv environments (see
:mod:`agentgym_bench.adapters.openenv`). OpenEnv is imported only when the server starts, so ``--help`` works without
it and a missing ``openenv`` (0.10; the older ``openenv-core`` runs only the client) is a one-line error naming the
install command."""

from __future__ import annotations

import argparse
import json

import uvicorn

from agentgym_bench import http_body
from agentgym_bench.errors import UserError


def configure_parser(parser: argparse.ArgumentParser) -> None:
    defaults = http_body.ServerLimits()
    parser.add_argument("env_ids", nargs="*", metavar="ENV_ID", default=["AgentFrozenLake-v0"],
                        help="agent env ids to serve; clients pick one with reset(env_id=...), default the first "
                             "(default: AgentFrozenLake-v0)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=http_body.port, default=8000, help="port (default: %(default)s)")
    parser.add_argument("--max-sessions", type=int, default=defaults.max_sessions,
                        help=f"concurrent WebSocket sessions (default: {defaults.max_sessions})")
    parser.add_argument("--session-ttl", type=float, default=defaults.session_ttl,
                        help=f"close a session idle this many seconds (default: {defaults.session_ttl:g}; 0: never)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make keyword arguments for every id, "
                        "e.g. '{\"prompt\": \"compact\"}'")


def run(args: argparse.Namespace) -> int:
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        raise UserError(f"--env-kwargs is not JSON: {e}") from e
    if not isinstance(env_kwargs, dict):
        raise UserError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    limits = http_body.ServerLimits().with_flags(max_sessions=args.max_sessions, session_ttl=args.session_ttl or None)

    # raises UserError naming the extra if it is missing
    from agentgym_bench.adapters.openenv import make_app  # noqa: PLC0415 - brings openenv

    app = make_app(args.env_ids, env_kwargs=env_kwargs, limits=limits)

    print(f"[openenv-serve] {args.env_ids} on ws://{args.host}:{args.port}/ws (max {limits.max_sessions} sessions)",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", ws_max_size=limits.ws_max_bytes)
    return 0
