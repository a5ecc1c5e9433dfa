"""``agentgym-bench board``: re-render a leaderboard (table, chart, page, transcripts) from its stored submissions,
or take a submission off it. A write to the board that was stopped part way (a ``submit`` killed between its
renames) is put back as it was first.

Examples::

    agentgym-bench board                              leaderboards/agentgym-v2
    agentgym-bench board --board runs/board
    agentgym-bench board --board runs/board --remove "my model"    its results file, transcripts and weights too
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym_bench.benchmark.suites import DEFAULT_SUITE
from agentgym_bench.leaderboard.board import rebuild
from agentgym_bench.paths import default_board


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("--board", default=None,
                        help=f"board folder (default: leaderboards/{DEFAULT_SUITE} of the repository the current "
                        "directory is in; outside one, give it)")
    parser.add_argument("--remove", metavar="NAME", default=None,
                        help="take the submission NAME (or its slug) off the board, with its results file, "
                        "transcripts and published weights (models/<slug>), and re-render; refused while another "
                        "entry shows its training record as the start it trained from")


def run(args: argparse.Namespace) -> int:
    board = Path(args.board) if args.board else default_board(DEFAULT_SUITE)
    index = rebuild(board, progress=True, remove=args.remove)
    removed = f"removed {args.remove!r}; " if args.remove is not None else ""
    print(f"rendered {board}: {removed}{len(index['submissions'])} submissions (README.md, scores.png, index.html)")
    return 0
