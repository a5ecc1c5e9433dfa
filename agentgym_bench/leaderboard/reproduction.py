"""A board's submission re-run and set against its record (``agentgym-bench reproduce``, whose ``--help`` tells how):
the submission found by name (:func:`find_submission`), the policy spec that re-creates it (:func:`spec_of`) and a
check of its weights (:func:`weights_note`), the suite cut to its first seeds (:func:`first_seeds`), and the
agreement of the re-run with the record, per entry and for the score, with the identical replies
(:func:`agreement`, :func:`format_rows`)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentgym_bench import stats
from agentgym_bench.benchmark.kinds import kind_of
from agentgym_bench.benchmark.replay import same_reply
from agentgym_bench.benchmark.results import EntryResults, Results
from agentgym_bench.benchmark.scores import summarize
from agentgym_bench.benchmark.suites import Suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.board import read_index
from agentgym_bench.leaderboard.comparison import excludes_zero
from agentgym_bench.leaderboard.folder import slugify
from agentgym_bench.leaderboard.render import compare
from agentgym_bench.leaderboard.verify import MODEL_FREE
from agentgym_bench.rollout.specs import locate_model, model_sha256


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
            model: str | None = None, board: str | Path | None = None) -> str:
    """The policy spec that re-creates a recorded ``metadata.policy``: its model found under the repository ``root``
    (:func:`~agentgym_bench.rollout.specs.locate_model`), else, for a published model (``.../models/<slug>``), in the
    ``board`` folder's own ``models/<slug>`` (a copy of a board outside its repository); or the folder ``model``
    (``--model``) instead. The caller checks the weights' hash (:func:`weights_note`)."""
    kind, recorded = policy["kind"], policy["model"]
    if model is not None and kind not in ("hf", "vllm"):
        raise UserError(f"--model gives the weights of a hf or vllm entry; this entry's policy is {kind!r}")
    if endpoint is not None and kind != "openai":
        raise UserError(f"--endpoint is the URL of an openai entry's server; this entry's policy is {kind!r}")
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
    if folder is None and board is not None and recorded and Path(recorded).parent.name == "models":
        own = Path(board) / "models" / Path(recorded).name
        folder = str(own) if own.is_dir() else None
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


def identical_share(same: int, total: int) -> str:
    """``same`` identical replies of ``total`` as the report writes them: ``same/total (percent%)``."""
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
                     f"{identical_share(same, total):<20}  {episodes_same:<11}  "
                     f"{'agrees' if r['agrees'] else 'DIFFERS'}")
    return lines
