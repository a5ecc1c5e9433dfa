"""``agentgym-bench reproduce``: re-run a leaderboard submission, from its recorded metadata or from other weights,
and say how much of it comes out the same.

Examples::

    agentgym-bench reproduce random                      a submission of leaderboards/agentgym-v2 by name or slug
    agentgym-bench reproduce "default model + SFT" --sample 20          the first 20 seeds of every entry
    agentgym-bench reproduce "default model + SFT" --model runs/mine    other weights on the same episodes
    agentgym-bench reproduce "my model" --board runs/board
    agentgym-bench reproduce api-model --endpoint http://127.0.0.1:8000/v1      openai: submissions need the URL
    agentgym-bench reproduce scripted --board leaderboards/agentgym-ma-v2       a two-player board

The policy is rebuilt from the recorded kind and model (``oracle``, ``random``, ``scripted``, ``hf:MODEL``,
``vllm:MODEL``, ``openai:MODEL@ENDPOINT``) with the recorded sampling settings and seed, history window, per-entry
prompts and action formats (``env_kwargs.action_format``: tool calls), and plays the same seeds: all of them, or
with ``--sample K`` the first K seeds of every entry (a fixed choice, the same for everyone; the board's transcripts
show the first 12).

Weights. A model path recorded relative to a repository resolves against the repository root of the board: the
nearest folder above the board that holds a ``leaderboards/`` folder (``leaderboards/<board>/`` sits in the root;
for a board outside any repository, the current directory). A published entry's weights are in
``leaderboards/<board>/models/<slug>/``, and its results file names that folder; where that path is not found
from the root (a copy of the board elsewhere), the board's own ``models/<slug>/`` is used. The weights found must
have the recorded ``model_sha256``, else reproduce stops with an error. ``--model PATH`` plays the weights in PATH (a
Hugging Face model folder) instead, and says whether their hash is the recorded one.

The report, per entry and for the suite score: the recorded and new numbers on the same seeds, their paired difference
(new - recorded) with its 95% paired bootstrap interval and, for success, McNemar's exact p (the board's comparison,
:func:`agentgym_bench.leaderboard.render.compare`), and the share of replies identical: token for token where both
runs record token ids (hf models), else as strings (model-free policies, endpoints). Turn t of an episode is compared
with turn t of the same seed; a turn that only one of the runs played counts as different. The runs *agree* if every
paired interval (each entry's and the score's) holds 0; the exit code is 0 if they agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym_bench.benchmark.evaluate import evaluate_by_entry, evaluate_suite
from agentgym_bench.benchmark.kinds import kind_of, suite_policy
from agentgym_bench.benchmark.results import loads
from agentgym_bench.benchmark.suites import DEFAULT_SUITE, parse_suite
from agentgym_bench.leaderboard.reproduction import (
    agreement,
    find_submission,
    first_seeds,
    format_rows,
    identical_share,
    on_seeds,
    spec_of,
    weights_note,
)
from agentgym_bench.paths import default_board, repository_root
from agentgym_bench.rollout.specs import sampling_of


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("Examples::", 1)[1]
    parser.add_argument("entry", help="the submission's name or slug")
    parser.add_argument("--board", default=None,
                        help=f"board folder (default: leaderboards/{DEFAULT_SUITE} of the repository the current "
                        "directory is in; outside one, give it)")
    parser.add_argument("--model", default=None, metavar="PATH",
                        help="play the weights in this Hugging Face model folder instead of the recorded ones "
                        "(hf and vllm entries)")
    parser.add_argument("--sample", type=int, default=None, metavar="K",
                        help="re-generate only the first K seeds of every entry (default: all)")
    parser.add_argument("--endpoint", default=None, help="base URL of the OpenAI-compatible endpoint (openai: only)")
    parser.add_argument("--device", default="cpu", help="torch device of hf: models (default: %(default)s)")



def run(args: argparse.Namespace) -> int:
    board = Path(args.board) if args.board else default_board(DEFAULT_SUITE)
    index, record = find_submission(board, args.entry)
    full_suite = parse_suite(index["suite"])
    suite = first_seeds(full_suite, args.sample)
    recorded = on_seeds(loads((board / "submissions" / f"{record['slug']}.json.gz").read_bytes()), suite)
    policy_record = recorded.metadata["policy"]
    spec = spec_of(policy_record, args.endpoint, repository_root(board), args.model, board)
    if policy_record["kind"] in ("hf", "vllm"):
        print(weights_note(policy_record, spec.split(":", 1)[1], args.model is not None))
    policy, new_record = suite_policy(spec, suite, sampling_of(policy_record), device=args.device)
    kind = kind_of(suite)
    choices = {option: {e.name: e.env_kwargs.get(option) for e in recorded.entries} for option in kind.options}
    seeds = "every seed" if args.sample is None else f"the first {args.sample} seeds of every entry"
    print(f"reproducing {record['name']!r} ({spec}, history {policy_record['history']}) on {suite.name} "
          f"v{suite.version}, {seeds}: {suite.episodes} of {full_suite.episodes} episodes")
    play = evaluate_by_entry if recorded.metadata["compute"].get("batching") == "entry" else evaluate_suite  # batches
    new = play(policy, suite, new_record, **choices, history=policy_record["history"], progress=True)
    rows = agreement(suite, recorded, new)
    print("\n".join(format_rows(rows, kind.outcome)))
    same, total, _ = rows[-1]["counts"]
    agree = all(r["agrees"] for r in rows)
    print(f"scores {'agree' if agree else 'DIFFER'}: {sum(r['agrees'] for r in rows[:-1])} of {len(rows) - 1} entries "
          f"and {'the' if rows[-1]['agrees'] else 'not the'} suite score (paired interval holds 0); replies: "
          f"{identical_share(same, total)} identical")
    return 0 if agree else 1
