"""``agentgym-bench board``: re-render a leaderboard (table, chart, page, transcripts) from its stored submissions.

Examples::

    agentgym-bench board                              leaderboards/agentgym-v2
    agentgym-bench board --board runs/board
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


def run(args: argparse.Namespace) -> int:
    board = Path(args.board) if args.board else default_board(DEFAULT_SUITE)
    index = rebuild(board, progress=True)
    print(f"rendered {board}: {len(index['submissions'])} submissions (README.md, scores.png, index.html)")
    return 0
