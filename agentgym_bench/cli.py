"""``agentgym-bench``: the command line.

Each subcommand lives in the module that owns its work; that module defines ``configure_parser(parser)`` and
``run(args) -> int``. This file only lists them, so ``--help`` works without importing torch or transformers.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from agentgym_bench.errors import UserError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "envs": ("agentgym_bench.commands.envs", "list the registered environment ids"),
    "play": ("agentgym_bench.commands.play", "play an environment in the terminal"),
    "demo": ("agentgym_bench.commands.demo", "oracle and random agents on every env, with scores"),
    "webshop-serve": ("agentgym_bench.envs.webshop.server", "serve the bundled WebShop store over HTTP"),
    "init-model": ("agentgym_bench.rollout.default_model", "build the small local default model"),
    "warmstart": ("agentgym_bench.rollout.warmstart", "supervised warm start on oracle demonstrations"),
    "train": ("agentgym_bench.commands.train", "train with StarPO, StarPO-S or GiGPO from a YAML config"),
    "serve": ("agentgym_bench.rollout.server", "serve a local model over an OpenAI-compatible /v1/chat/completions"),
    "openenv-serve": ("agentgym_bench.commands.openenv_serve", "serve agent envs as OpenEnv environments"),
    "eval": ("agentgym_bench.commands.eval", "play a benchmark suite with a policy and write a results file"),
    "submit": ("agentgym_bench.commands.submit", "verify a results file and put it on a leaderboard"),
    "board": ("agentgym_bench.commands.board", "re-render a leaderboard from its stored submissions"),
    "reproduce": ("agentgym_bench.commands.reproduce", "re-run a leaderboard submission and compare the numbers"),
    "baselines": ("agentgym_bench.commands.baselines", "the main job: every reference baseline evaluated and put on a "
                  "leaderboard"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentgym-bench",
        description="Text environments, rollouts, trainers and a verified leaderboard for LLM agents.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv or ["--help"])  # prints help or the "invalid choice" error, then exits
        return 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    command_parser = argparse.ArgumentParser(prog=f"agentgym-bench {name}", description=help_text)
    module.configure_parser(command_parser)
    args = command_parser.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    except UserError as e:
        print(f"agentgym-bench: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
