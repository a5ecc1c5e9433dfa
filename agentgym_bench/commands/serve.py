"""``agentgym-bench serve``: a local model behind an OpenAI-compatible server (``/v1/chat/completions``,
``/v1/models``, ``/v1/responses``), :class:`agentgym_bench.serving.chat.ChatServer`, whose module docstring is the
server's specification.

Run: ``agentgym-bench serve [NAME_OR_PATH] [--port 8000]`` (``--model NAME_OR_PATH`` says the same), then point
:class:`~agentgym_bench.rollout.openai_compat.OpenAIPolicy` (or any OpenAI client) at ``http://127.0.0.1:PORT/v1``.
"""

from __future__ import annotations

import argparse
import os

from agentgym_bench import http_body
from agentgym_bench.errors import UserError


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", default=None, metavar="MODEL",
                        help="model folder, name under $AGENTGYM_BENCH_HOME/models (default, warmstart) or hub id "
                        "to serve, as `vllm serve MODEL` (default: default, built by `agentgym-bench init-model`)")
    parser.add_argument("--model", dest="model_flag", default=None, metavar="MODEL",
                        help="the same as MODEL (either one)")
    parser.add_argument("--name", default=None, help="model name reported to clients (default: the MODEL value)")
    parser.add_argument("--port", type=http_body.port, default=8000, help="port on 127.0.0.1 (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--api-key-env", default=None,
                        help="environment variable whose value clients must send as the bearer key (default: none)")
    parser.add_argument("--max-connections", type=int, default=http_body.ServerLimits.max_connections,
                        help="connections open at once (idle and slow ones included); another is answered a 503 "
                        "and closed (default: %(default)s)")
    parser.add_argument("--max-requests", type=int, default=http_body.ServerLimits.max_requests,
                        help="requests read and answered at once (each waits its turn for the model); another "
                        "gets a 503 (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    if args.model is not None and args.model_flag is not None and args.model != args.model_flag:
        raise UserError(f"two models given: {args.model} and --model {args.model_flag}; serve one")
    name = args.model or args.model_flag or "default"
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else None
    if args.api_key_env and not key:  # else the server would start open, with the key asked for unset
        raise UserError(f"--api-key-env {args.api_key_env}: the variable is unset or empty; export the key in it "
                        "(clients send it as their bearer key), or leave --api-key-env out to serve without one")
    limits = http_body.ServerLimits().with_flags(max_connections=args.max_connections, max_requests=args.max_requests)
    from agentgym_bench.rollout.hf import load_model  # noqa: PLC0415 - brings torch
    from agentgym_bench.serving.chat import HOST, ChatServer  # noqa: PLC0415 - brings torch

    model, tokenizer = load_model(name, device=args.device)
    http_body.raise_open_files_limit(limits.max_connections + 256)
    try:
        server = ChatServer(model, tokenizer, model_name=args.name or name, port=args.port,
                            api_key=key or None, verbose=args.verbose, limits=limits)
    except OSError as err:
        raise http_body.listen_error(HOST, args.port, err) from err
    print(f"serving {name} at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m agentgym_bench.commands.serve",
                                     description=__doc__.split("\n")[0])
    configure_parser(parser)
    raise SystemExit(run(parser.parse_args()))
