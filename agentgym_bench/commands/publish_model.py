"""``agentgym-bench publish-model``: put a model's weights beside a board, rounded to bfloat16, for its entry.

Examples::

    agentgym-bench publish-model runs/starpo --name "default model + SFT + StarPO"
    agentgym-bench eval --policy hf:leaderboards/agentgym-v2/models/default-model-sft-starpo --out starpo.json.gz
    agentgym-bench submit starpo.json.gz --name "default model + SFT + StarPO"

The folder is ``<board>/models/<slug of NAME>`` (agentgym_bench/leaderboard/weights.py). Evaluate the entry from
that folder, not from the source: rounding the weights changes the model a little, and the board's results file must
name the published file (by its path in the repository and its hash) so that anyone can re-generate it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym_bench.benchmark.suites import DEFAULT_SUITE
from agentgym_bench.leaderboard.weights import publish_model
from agentgym_bench.paths import default_board


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("source", help="the model: a Hugging Face folder, or a trainer run folder (its last "
                        "checkpoint's actor)")
    parser.add_argument("--name", required=True, help="the entry's name on the board")
    parser.add_argument("--board", default=None,
                        help=f"board folder (default: leaderboards/{DEFAULT_SUITE} of the repository the current "
                        "directory is in; outside one, give it)")
    parser.add_argument("--replace", "--overwrite", dest="replace", action="store_true",
                        help="overwrite the entry's published model (--overwrite, as eval and init-model name it, is "
                        "the same)")


def run(args: argparse.Namespace) -> int:
    board = Path(args.board) if args.board else default_board(DEFAULT_SUITE)
    folder = publish_model(args.source, board, args.name, replace=args.replace)
    size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
    print(f"published {args.source} as {folder} ({size:.1f} MiB, weights in bfloat16); evaluate it with: "
          f"agentgym-bench eval --policy hf:{folder} ...")
    return 0
