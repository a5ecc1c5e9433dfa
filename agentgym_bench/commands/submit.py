"""``agentgym-bench submit``: verify a results file and put it on a leaderboard.

Examples::

    agentgym-bench submit results.json.gz --name "my model" --check     verify only; writes nothing
    agentgym-bench submit results.json.gz --name "my model"             onto leaderboards/<suite>/ here
    agentgym-bench submit results.json.gz --name "my model" --board runs/board --replace

The checks (schema, suite version, seeds, replay of every episode, re-generation of every episode of a model-free
policy and of a local model) are those of :func:`agentgym_bench.leaderboard.verify.verify`; see
docs/leaderboard.md. Re-generating a local model costs what its evaluation's generation cost; above
``--regeneration-cap`` estimated FLOPs (default 5e13, about 12 times the published default models' files) it is
not attempted and the entry is marked replayed, with the estimate on the board. A relative model path in the file
resolves against the repository the board is in (the nearest folder above the board that holds ``leaderboards/``;
the current directory for a board outside any), and a board in a repository's ``leaderboards/`` refuses a model
named by a path of the machine that evaluated it
(:func:`agentgym_bench.leaderboard.board.check_model_name`).
"""

from __future__ import annotations

import argparse
import functools
import math
from pathlib import Path

from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.scores import format_summary, summarize
from agentgym_bench.benchmark.suites import available_suites, check_ceilings, load_suite, parse_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard import board as boards
from agentgym_bench.leaderboard.board import check_free, check_open, read_index, submit
from agentgym_bench.leaderboard.folder import put_back_interrupted, slugify
from agentgym_bench.leaderboard.regenerate import REGENERATION_CAP
from agentgym_bench.leaderboard.verify import check_name, verify
from agentgym_bench.paths import default_board, enclosing_board, repository_root


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("results", help="results file written by `agentgym-bench eval`, gzip-compressed (.json.gz) as "
                        "a board stores it (a plain .json: gzip -n FILE first)")
    parser.add_argument("--name", required=True, help="name on the board: 1-64 of letters, digits, space . _ + -")
    parser.add_argument("--board", default=None,
                        help="board folder (default: leaderboards/<suite name> of the repository the current "
                        "directory is in; outside one, give it)")
    parser.add_argument("--check", action="store_true",
                        help="verify, and check the name is free on the board; write nothing")
    parser.add_argument("--replace", action="store_true", help="replace the submission of the same name")
    parser.add_argument("--suite", default=None,
                        help="check against this suite (bundled name or file; default: the suite of --board if it "
                             "exists, else the bundled suite the file names)")
    parser.add_argument("--no-regenerate", action="store_true",
                        help="do not re-generate a local hf model's replies (the file can only be marked replayed); "
                        "model-free policies are always re-generated in full")
    parser.add_argument("--regeneration-cap", type=_flops, default=REGENERATION_CAP, metavar="FLOPS",
                        help="most estimated forward-pass FLOPs spent re-generating a local hf model's replies "
                        "(2 x parameters x prompt and reply tokens); a file above it stays replayed, saying so "
                        "(default: %(default)g; inf: no cap)")


def _flops(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of FLOPs (e.g. 1e15, or inf)")
    return value


def run(args: argparse.Namespace) -> int:
    name = check_name(args.name)
    if Path(args.results).is_file() and Path(args.results).read_bytes()[:2] != b"\x1f\x8b":
        raise UserError(f"{args.results} is not gzip-compressed: a board stores a results file as submitted, as eval "
                        f"writes it (.json.gz); compress it first: gzip -n {args.results}")
    suite = load_suite(args.suite) if args.suite else None
    if args.board is None and not args.check:
        default_board("", Path.cwd())  # outside a repository: refused before any work, nothing made
    root = repository_root(args.board or Path.cwd())
    named = functools.cache(lambda: read_results(args.results).suite_name)  # the file's suite, read once, no replay
    board = Path(args.board) if args.board else default_board(suite.name if suite else named()) if root else None
    if board is not None and board.exists() and not board.is_dir():
        raise UserError(f"--board {board} is a file: give a board's folder (a new folder starts a board)")
    if board is not None and not args.check:
        put_back_interrupted(board)  # the checks below read the other entries' stored files before the lock
    index = read_index(board) if board is not None else None
    played = suite or (parse_suite(index["suite"]) if index is not None else None) or (
        load_suite(named()) if named() in available_suites() else None)
    if played is not None and played.split != "test":  # a board ranks one read of a held-out test suite
        raise UserError(f"{args.results} holds results of a {played.split} suite: tune and choose on it, then "
                        "evaluate the chosen model on the test suite and submit that file")
    if board is not None and index is None and (outer := enclosing_board(board)) is not None:
        raise UserError(f"--board {board} lies inside the board {outer}: give that board's folder")
    if index is not None:  # cheap refusals first (an archived board's new name, another suite, a taken name)
        check_open(index, name, parse_suite(index["suite"]))
        if (file_suite := named()) != index["suite"]["name"]:  # before the board's suite stands in for the file's
            raise UserError(f"{args.results} holds results of suite {file_suite!r}; the board {board} is for "
                            f"suite {index['suite']['name']!r}")
        suite = suite or parse_suite(index["suite"])  # a board holds one suite: check against it
        check_free(index, name, suite, args.replace)
    elif board is not None and not args.check:
        print(f"no board in {board} yet: this submission starts one, for suite {suite.name if suite else named()}")
        if suite is not None and suite.name not in available_suites():
            check_ceilings(suite)  # a suite file's ceilings, which every score on the board is divided by
    screen = None if index is None else functools.partial(boards.screen, board, index, name)  # in seconds
    verified = verify(args.results, suite, regenerate=not args.no_regenerate, progress=True, root=root,
                      board=lambda _: board, regeneration_cap=args.regeneration_cap, screen=screen)
    print(f"{args.results}: {verified.episodes} episodes replayed; {verified.mark} ({verified.regeneration})")
    for note in verified.notes:
        print(f"note: {note}")
    summary = summarize(verified.results, verified.suite)
    print(format_summary(summary))
    if board is None:
        print("check passed: verified; nothing written (no board here: give --board to check the name on one)")
        return 0
    if args.check:
        index = read_index(board)
        boards.check_admissible(index, board, name, verified, args.replace)
        if screen is None:  # the screen has refused copies of this board already (it reads every submission)
            boards.check_not_a_copy(board, index, name, verified.results, verified.sha256)
        boards.check_same_training(board, index, name, verified)
        print(f"check passed: {name!r} would go on {board} as {verified.mark} (nothing written)")
        return 0
    submit(verified, name, board, replace=args.replace, summary=summary, progress=True)
    print(f"accepted {name!r} as {verified.mark}: {board / 'submissions' / (slugify(name) + '.json.gz')}; "
          f"board in {board} (README.md, index.html)")
    return 0
