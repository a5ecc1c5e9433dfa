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
``leaderboards/<board>/models/<slug>/``, and its results file names that folder. The weights found must have the
recorded ``model_sha256``, else reproduce stops with an error. ``--model PATH`` plays the weights in PATH (a Hugging
Face model folder) instead, and says whether their hash is the recorded one.

The report, per entry and for the suite score: the recorded and new numbers on the same seeds, their paired difference
(new - recorded) with its 95% paired bootstrap interval and, for success, McNemar's exact p (the board's comparison,
:func:`agentgym_bench.leaderboard.render.compare`), and the share of replies identical: token for token where both
runs record token ids (hf models), else as strings (model-free policies, endpoints). Turn t of an episode is compared
with turn t of the same seed; a turn that only one of the runs played counts as different. The runs *agree* if every
paired interval (each entry's and the score's) holds 0; the exit code is 0 if they agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentgym_bench import stats
from agentgym_bench.benchmark.evaluate import evaluate_by_entry, evaluate_suite
from agentgym_bench.benchmark.kinds import kind_of, suite_policy
from agentgym_bench.benchmark.replay import same_reply
from agentgym_bench.benchmark.results import EntryResults, Results, loads
from agentgym_bench.benchmark.scores import summarize
from agentgym_bench.benchmark.suites import DEFAULT_SUITE, Suite, parse_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.board import read_index, slugify
from agentgym_bench.leaderboard.comparison import excludes_zero
from agentgym_bench.leaderboard.render import compare
from agentgym_bench.leaderboard.verify import MODEL_FREE
from agentgym_bench.paths import default_board, repository_root
from agentgym_bench.rollout.specs import locate_model, model_sha256, sampling_of


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


def find_submission(board: Path, entry: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(index, record)`` of the submission named (or slugged) ``entry`` on ``board``; a :class:`UserError`
    listing the names if there is none."""
    index = read_index(board)
    if index is None:
        raise UserError(f"{board} holds no board ({board / 'board.json'} is missing)")
    record = next((r for r in index["submissions"] if entry in (r["name"], r["slug"])
                   or slugify(entry) == r["slug"]), None)
    if record is None:
        raise UserError(f"board {board} has no submission {entry!r}; it has "
                        f"{[r['name'] for r in index['submissions']]}")
    return index, record


def spec_of(policy: dict[str, Any], endpoint: str | None, root: str | Path | None = None,
            model: str | None = None) -> str:
    """The policy spec that re-creates a recorded ``metadata.policy``: its model found under the repository ``root``
    (:func:`~agentgym_bench.rollout.specs.locate_model`), or the folder ``model`` (``--model``) instead."""
    kind, recorded = policy["kind"], policy["model"]
    if model is not None and kind not in ("hf", "vllm"):
        raise UserError(f"--model gives the weights of a hf or vllm entry; this entry's policy is {kind!r}")
    if kind in MODEL_FREE:
        return kind
    if kind == "openai":
        if not endpoint:
            raise UserError(f"the submission played model {recorded!r} behind an OpenAI-compatible endpoint; pass its "
                            "base URL with --endpoint")
        return f"openai:{recorded}@{endpoint}"
    if model is not None:
        if not Path(model).is_dir():
            raise UserError(f"--model {model}: no such folder")
        return f"{kind}:{model}"
    folder = locate_model(recorded, root)
    if folder is None:
        raise UserError(f"the submission's model {recorded!r} is not on this machine (a relative path is looked for "
                        f"under {root or Path.cwd()}); pass --model PATH to play weights from elsewhere")
    return f"{kind}:{folder}"


def weights_note(policy: dict[str, Any], folder: str, given: bool) -> str:
    """One line on the weights in ``folder`` against the recorded ``model_sha256``. Different weights are a
    :class:`UserError` unless they were ``given`` (``--model``), where the line reports the difference."""
    found, recorded = model_sha256(folder), policy["model_sha256"]
    where = f"--model {folder}" if given else f"weights {folder}"
    if recorded is None:
        return f"{where}: sha256 {found}; the submission records no weights hash"
    if found == recorded:
        return f"{where}: sha256 {found}, the recorded one"
    if not given:
        raise UserError(f"the weights in {folder} (sha256 {found}) are not the ones the submission recorded "
                        f"(model_sha256 {recorded}); restore them, or pass --model {folder} to compare them anyway")
    return f"{where}: sha256 {found}, other weights than the recorded {recorded}"


def first_seeds(suite: Suite, k: int | None) -> Suite:
    """``suite`` with every entry cut to its first ``k`` seeds (``None``: unchanged)."""
    if k is None:
        return suite
    if k < 1:
        raise UserError(f"--sample {k} must be at least 1")
    return replace(suite, entries=tuple(replace(e, episodes=min(k, e.episodes)) for e in suite.entries))


def on_seeds(results: Results, suite: Suite) -> Results:
    """``results`` with only the episodes of ``suite``'s seeds."""
    entries = [replace(e, episodes=[ep for ep in e.episodes if ep.seed in suite.entry(e.name).seeds])
               for e in results.entries]
    return replace(results, entries=entries)


def identical_replies(recorded: EntryResults, new: EntryResults) -> tuple[int, int, int]:
    """``(identical replies, replies, identical episodes)`` of two runs of an entry on the same seeds (see the module
    docstring)."""
    theirs = {ep.seed: ep for ep in new.episodes}
    same = total = episodes = 0
    for ep in recorded.episodes:
        a, b = ep.turns, theirs[ep.seed].turns
        k = sum(same_reply(x.reply, x.token_ids, y.reply, y.token_ids) for x, y in zip(a, b, strict=False))
        same, total = same + k, total + max(len(a), len(b))
        episodes += k == len(a) == len(b)
    return same, total, episodes


def agreement(suite: Suite, recorded: Results, new: Results) -> list[dict[str, Any]]:
    """Rows of the report: per suite entry, then ``"score"``: the recorded and new numbers (success rate with its
    Wilson interval, a match entry's mean payoff with its normal interval, the suite score with its bootstrap
    interval, as ``(mean, low, high)``), the paired difference ``new - recorded`` (``difference``, ``low``,
    ``high``, ``p``), whether its interval holds 0 (``agrees``), and the identical replies and episodes."""
    paired = compare(suite, recorded, new, reps=stats.BOOTSTRAP_REPS)
    rows = []
    for e in suite.entries:
        x, y = recorded.entry(e.name), new.entry(e.name)
        kind = kind_of(e)
        rows.append({"entry": e.name, "recorded": kind.interval(kind.outcomes(x)),
                     "new": kind.interval(kind.outcomes(y)), "paired": paired["entries"][e.name],
                     "counts": identical_replies(x, y), "n": len(x.episodes)})
    counts = [sum(r["counts"][i] for r in rows) for i in range(3)]
    rows.append({"entry": "score", "recorded": summarize(recorded, suite).score, "new": summarize(new, suite).score,
                 "paired": paired["suite"], "counts": tuple(counts), "n": sum(r["n"] for r in rows)})
    for r in rows:
        r["agrees"] = not excludes_zero(r["paired"])
    return rows


def _share(same: int, total: int) -> str:
    return f"{same}/{total} ({100 * same / total if total else 100:.1f}%)"


def format_rows(rows: list[dict[str, Any]], what: str) -> list[str]:
    """The report's table (see :func:`agreement`)."""
    width = max(len(r["entry"]) for r in rows)
    lines = [f"{what} (score: the suite score), recorded and new on the same seeds; identical replies: token for "
             "token where both runs record tokens, else as text",
             f"{'entry':<{width}}  {'recorded [95% CI]':<22}  {'new [95% CI]':<22}  {'new - recorded [95% CI]':<25}  "
             f"{'p':>6}  {'identical replies':<20}  {'episodes':<11}  verdict"]
    for r in rows:
        (old, old_low, old_high), (new, new_low, new_high), d = r["recorded"], r["new"], r["paired"]
        same, total, episodes = r["counts"]
        p = "-" if math.isnan(d["p"]) else f"{d['p']:.4f}"
        episodes_same = f"{episodes}/{r['n']}"
        lines.append(f"{r['entry']:<{width}}  {old:.3f} [{old_low:.3f}, {old_high:.3f}]    "
                     f"{new:.3f} [{new_low:.3f}, {new_high:.3f}]    "
                     f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]   {p:>6}  "
                     f"{_share(same, total):<20}  {episodes_same:<11}  "
                     f"{'agrees' if r['agrees'] else 'DIFFERS'}")
    return lines


def run(args: argparse.Namespace) -> int:
    board = Path(args.board) if args.board else default_board(DEFAULT_SUITE)
    index, record = find_submission(board, args.entry)
    full_suite = parse_suite(index["suite"])
    suite = first_seeds(full_suite, args.sample)
    recorded = on_seeds(loads((board / "submissions" / f"{record['slug']}.json.gz").read_bytes()), suite)
    policy_record = recorded.metadata["policy"]
    spec = spec_of(policy_record, args.endpoint, repository_root(board), args.model)
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
          f"{_share(same, total)} identical")
    return 0 if agree else 1
