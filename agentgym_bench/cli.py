"""``agentgym-bench``: the command line.

Each subcommand is a command module, of ``agentgym_bench/commands/`` or ``trainers/cli.py``, that parses its arguments
and calls the library; it defines ``configure_parser(parser)`` and ``run(args) -> int`` (``trainers/cli.py``, which
holds two commands, an object of both per command, named ``module:NAME``). Three are the module that owns their
work (``webshop-serve``, ``init-model``, ``compare-runs``); ``tests/test_code_map.py`` holds the rule and lists them.
This file only lists the commands, so ``--help`` works without importing torch or transformers, and turns a
:class:`~agentgym_bench.errors.UserError` into one line, ``agentgym-bench: error: ...``, and exit code 2; an error of
the disk or a folder (full, read-only, no permission: :data:`STORAGE_ERRORS`) gets one line too, and exit code 1.
``agentgym-bench --debug COMMAND ...`` (or ``AGENTGYM_BENCH_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys

import agentgym_bench
from agentgym_bench.errors import UserError

# name -> (module, one-line help); "module:NAME" when the module holds several commands (NAME: an object with
# configure_parser and run, as a command module has)
COMMANDS: dict[str, tuple[str, str]] = {
    "envs": ("agentgym_bench.commands.envs", "list the registered environment ids"),
    "play": ("agentgym_bench.commands.play", "play an environment, or a seat of a two-player one, in the terminal"),
    "demo": ("agentgym_bench.commands.demo", "oracle and random agents on every env, with scores"),
    "webshop-serve": ("agentgym_bench.envs.webshop.server", "serve the bundled WebShop store over HTTP"),
    "init-model": ("trainers.sft.default_model", "build the small local default model"),
    "warmstart": ("trainers.cli:WARMSTART", "supervised warm start on oracle demonstrations from a YAML config"),
    "train": ("trainers.cli", "train with StarPO, StarPO-S or GiGPO from a YAML config"),
    "compare-runs": ("trainers.rl.compare", "compare two training settings, paired on the validation episodes"),
    "serve": ("agentgym_bench.commands.serve", "serve a local model over an OpenAI-compatible /v1/chat/completions"),
    "openenv-serve": ("agentgym_bench.commands.openenv_serve", "serve agent envs as OpenEnv environments"),
    "eval": ("agentgym_bench.commands.eval", "play a benchmark suite with a policy and write a results file"),
    "compare-results": ("agentgym_bench.commands.compare_results", "compare results files of one suite, paired on the "
                        "same seeds"),
    "submit": ("agentgym_bench.commands.submit", "verify a results file and put it on a leaderboard"),
    "board": ("agentgym_bench.commands.board", "re-render a leaderboard from its stored submissions"),
    "reproduce": ("agentgym_bench.commands.reproduce", "re-run a leaderboard submission and compare the numbers"),
    "publish-model": ("agentgym_bench.commands.publish_model", "put a model's weights (bfloat16) beside a board for "
                      "its entry"),
    "baselines": ("agentgym_bench.commands.baselines", "the main job: every reference baseline evaluated and put on a "
                  "leaderboard"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentgym-bench",
        description="Text environments, rollouts, trainers and a verified leaderboard for LLM agents.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error, wherever it is written on the line (also: "
                        "AGENTGYM_BENCH_DEBUG=1)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {agentgym_bench.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    return parser


REST_ROLE = re.compile(r":[a-z]+:`(~?)([^`<]*?)\s*(?:<[^`>]*>)?`")
"""A Sphinx role (``:func:`~a.b.c```, ``:mod:`a.b``` or ``:ref:`title <target>```): groups ``~``, name or title."""


def plain_text(doc: str | None) -> str | None:
    """A module docstring's reStructuredText as plain text for ``--help``: ``code`` loses its backticks, a role
    (:data:`REST_ROLE`) becomes its name (the last dotted part after ``~``) or title, ``**strong**`` loses its
    stars, and a literal-block marker ``::`` ending a line becomes ``:``. ``None`` stays ``None``."""
    if doc is None:
        return None
    text = REST_ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), doc)
    text = re.sub(r"\*\*(\S[^*]*?)\*\*", r"\1", text.replace("``", ""))
    return re.sub(r"\s*::$", ":", text, flags=re.M)


RESUME_HINTS = {"train": "; the same command with resume_from_checkpoint=auto goes on from the last checkpoint",
                "warmstart": "; the same command again goes on from the last checkpoint",
                "eval": "; the same command again keeps the entries it finished"}
"""What a stopped command that keeps checkpoints says about going on."""

STORAGE_ERRORS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The errors of a folder or disk (no permission, read-only, full, a file-size limit) that get one line, not a
traceback: the cause is the machine's, not the program's, and what a command finished is kept, so the same command
goes on once it is mended."""


def storage_error(err: BaseException | None) -> OSError | None:
    """The :data:`STORAGE_ERRORS` error behind ``err``, or ``None``: an :class:`OSError` in ``err``'s chain of causes,
    or the error number that safetensors' writer names in its message (``... (os error 28)``); torch's writer names
    none (``file write failed``), which is read as a full disk."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in STORAGE_ERRORS:
            return err
        found = re.search(r"\(os error (\d+)\)", str(err))
        number = int(found.group(1)) if found else errno.ENOSPC if "file write failed" in str(err) else None
        if number in STORAGE_ERRORS:
            return OSError(number, os.strerror(number))
        err = err.__cause__ or err.__context__
    return None


def storage_error_line(err: OSError, command: str) -> str:
    """The one line for a :data:`STORAGE_ERRORS` error: what failed, on which path, and how to go on."""
    where = f": {err.filename}" if err.filename else ""
    return f"{err.strerror}{where}{RESUME_HINTS.get(command, '')}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = os.environ.get("AGENTGYM_BENCH_DEBUG", "") not in ("", "0")
    if "--debug" in argv[: argv.index("--") if "--" in argv else len(argv)]:  # before a command or after it
        debug, argv = True, [a for a in argv if a != "--debug"]
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv or ["--help"])  # prints help or the "invalid choice" error, then exits
        return 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    try:
        module_name, _, attribute = module_name.partition(":")
        module = importlib.import_module(module_name)
        command = getattr(module, attribute) if attribute else module
        command_parser = argparse.ArgumentParser(prog=f"agentgym-bench {name}", description=help_text)
        command.configure_parser(command_parser)
        # commands build their description and epilog from their module docstring: show it without reST markup
        command_parser.description = plain_text(command_parser.description)
        command_parser.epilog = plain_text(command_parser.epilog)
        args = command_parser.parse_intermixed_args(argv[1:])  # options may sit between positionals
        return int(command.run(args) or 0)
    except UserError as err:
        if debug:
            raise
        print(f"agentgym-bench: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"agentgym-bench: interrupted{RESUME_HINTS.get(name, '')}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:
        if debug or (stored := storage_error(err)) is None:
            raise
        print(f"agentgym-bench: error: {storage_error_line(stored, name)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
