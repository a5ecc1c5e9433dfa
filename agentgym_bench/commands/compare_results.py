"""``agentgym-bench compare-results``: two results files of one suite, paired on the same seeds.

Each later file against the first: per entry the difference of success (a match entry: of the mean payoff) with a
paired bootstrap interval and McNemar's exact p, and the difference of the suite score with a bootstrap interval
stratified by entry — the comparison a leaderboard shows between two of its submissions
(``agentgym_bench.leaderboard.render.compare``), without putting either on a board. Single-agent entries also show
the mean return and its paired difference (WebShop's graded purchase reward, which success only counts at 1, less
0.1 for each reply that broke the format). The
files are checked as a board checks them (suite name and version, entries, one episode per seed) but not replayed:
``agentgym-bench submit`` verifies. Quick checks (``eval --episodes`` / ``--entries``) are compared too, on the
episodes they played: with a base that played the same ones (e.g. a model through ``serve`` against the same model
through ``hf:``), or with a whole-suite base (a board's submission), which is cut to those entries and seeds; the
score is then over those entries and episodes only.

Examples::

    agentgym-bench compare-results warmstart.json.gz gigpo.json.gz
    agentgym-bench compare-results leaderboards/agentgym-v1/submissions/oracle.json.gz mine.json.gz other.json.gz
    agentgym-bench compare-results --suite my-suite.json base.json.gz mine.json.gz   # files of eval --suite FILE
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.kinds import kind_of
from agentgym_bench.benchmark.results import Results
from agentgym_bench.benchmark.scores import summarize
from agentgym_bench.benchmark.suites import Suite, load_suite, quick_text
from agentgym_bench.leaderboard.render import PAIRED_REPS, compare, entry_outcomes
from agentgym_bench.leaderboard.reproduction import on_seeds
from agentgym_bench.leaderboard.verify import played_text, read_checked
from agentgym_bench.stats import paired_difference


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = __doc__.split("\n\n", 1)[1].split("Examples::", 1)[0].strip()
    parser.epilog = "examples:" + __doc__.split("Examples::", 1)[1]
    parser.add_argument("base", help="results file to compare against (agentgym-bench eval --out)")
    parser.add_argument("others", nargs="+", metavar="results", help="results files compared with BASE")
    parser.add_argument("--suite", default=None, help="the suite the files were played on, a bundled name or a suite "
                        "file (default: the bundled suite BASE names)")


def comparison_table(suite: Suite, base: Results, other: Results, base_score: float) -> list[str]:
    """Markdown rows of ``other`` against ``base`` (``other - base``; ``base_score``: the base's suite score): the
    suite score, then every entry. On a single-agent suite each entry also shows its mean return and their paired
    difference: where rewards are graded (WebShop's purchase score) success is only the top grade."""
    def interval(d: Any) -> str:
        return f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"

    c = compare(suite, base, other)
    returns = not kind_of(suite).outcome_is_return
    lines = ["| entry | base | this | difference [95% CI] | p |" + (" return: base | this | difference [95% CI] |"
                                                                   if returns else "")]
    lines.append("|---" * (8 if returns else 5) + "|")
    rows = [("score", base_score, summarize(other, suite).score[0], c["suite"])]
    rows += [(name, e["a"], e["b"], e) for name, e in c["entries"].items()]
    for name, a, b, d in rows:
        p = "-" if math.isnan(d["p"]) else f"{d['p']:.2g}"
        line = f"| {name} | {a:.3f} | {b:.3f} | {interval(d)} | {p} |"
        if returns and name == "score":
            line += " - | - | - |"
        elif returns:
            r = paired_difference(entry_outcomes(base, name, returns=True), entry_outcomes(other, name, returns=True),
                                  reps=PAIRED_REPS)
            line += f" {r.mean_a:.3f} | {r.mean_b:.3f} | {interval(vars(r))} |"
        lines.append(line)
    return lines


def cut_to(base: Results, suite: Suite, quick: dict[str, Any]) -> Results:
    """A whole-suite ``base`` cut to the entries and seeds of ``suite``, the part a quick check ``quick`` played,
    and marked as that quick check: what the quick check is compared with."""
    names = {e.name for e in suite.entries}
    kept = replace(base, entries=[e for e in base.entries if e.name in names])
    return replace(on_seeds(kept, suite), metadata={**base.metadata, "quick_check": quick})


def run(args: argparse.Namespace) -> int:
    whole, whole_suite = read_checked(args.base, load_suite(args.suite) if args.suite else None)
    quick = whole.metadata.get("quick_check")
    for path in args.others:
        other, suite = read_checked(path, whole_suite, whole)  # suite: the part of it the file played
        mine = other.metadata.get("quick_check")
        base, part = whole, ""
        if quick is None and mine is not None:  # a quick check against a whole file: the file's same episodes
            base = cut_to(whole, suite, mine)
            part = f" (the base cut to the quick check's episodes, {quick_text(mine)}: the score is over those only)"
        elif quick is not None:
            part = f" ({played_text(quick)}: the score is over its entries and episodes only)"
        test = "McNemar's exact p" if kind_of(suite).paired_test else "mean payoffs, no p"
        print(f"{Path(path).name} against {Path(args.base).name} on the same seeds of {suite.name}{part} "
              f"(this - base; 95% paired bootstrap interval, {test}):")
        print("\n".join(comparison_table(suite, base, other, summarize(base, suite).score[0])) + "\n")
    return 0
