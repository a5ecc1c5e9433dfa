"""What a results file scores, recomputed from its episodes (never stored): per entry the success rate (Wilson), the
mean return, the outcome over the entry's ceiling and what the entry's kind adds (a match's draw, loss and deal
rates), and the suite score with its stratified bootstrap interval. The outcome the score averages is the kind's
(:meth:`~.kinds.Kind.outcomes`: success, or a match's payoff for the policy).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentgym_bench import stats
from agentgym_bench.benchmark.kinds import Kind, kind_of
from agentgym_bench.benchmark.matches import MatchSummary
from agentgym_bench.benchmark.results import EntryResults, Results
from agentgym_bench.benchmark.suites import Suite
from agentgym_bench.errors import UserError


@dataclass(frozen=True)
class EntrySummary:
    """What the tables show for one entry. For a match entry ``success`` is the win rate, ``mean_return`` the
    learner's mean payoff and ``match`` the rest."""

    name: str
    prompt: str
    success: stats.Rate
    mean_return: tuple[float, float, float]
    normalised: float
    match: MatchSummary | None = None


@dataclass(frozen=True)
class Summary:
    entries: tuple[EntrySummary, ...]
    score: tuple[float, float, float]
    """Mean over entries of the scored outcome over its ceiling (success / oracle success; a match entry's mean
    payoff), with its stratified bootstrap interval."""
    kind: Kind
    """The suite's kind (what the score is, how its entries are tabled)."""


def entry_summary(entry: EntryResults, ceiling: float) -> EntrySummary:
    """One entry's summary (see :class:`EntrySummary`)."""
    kind = kind_of(entry)
    return EntrySummary(entry.name, entry.prompt, stats.success_rate(entry.successes()),
                        stats.mean_interval(entry.returns()), float(kind.outcomes(entry).mean() / ceiling),
                        kind.details(entry))


def summarize(results: Results, suite: Suite, *, seed: int = 0) -> Summary:
    """Per-entry success (Wilson), mean return, normalised outcome (and win/draw/loss/deal for matches), and the suite
    score with its interval."""
    if results.suite_name != suite.name:
        raise UserError(f"results of suite {results.suite_name!r} cannot be scored with suite {suite.name!r} (its "
                        "ceilings and entries)")
    ceilings, order = suite.ceilings, {e.name: i for i, e in enumerate(suite.entries)}
    played = sorted(results.entries, key=lambda e: order.get(e.name, len(order)))  # the suite's order, not the file's
    entries = tuple(entry_summary(e, ceilings[e.name]) for e in played)
    score = stats.aggregate_interval({e.name: kind_of(e).outcomes(e) for e in played}, ceilings, seed=seed)
    return Summary(entries, score, kind_of(suite))


def format_summary(summary: Summary) -> str:
    """A plain-text table of a summary (what ``agentgym-bench eval`` prints)."""
    lines = summary.kind.summary_lines(summary.entries)
    score, low, high = summary.score
    lines.append(f"score ({summary.kind.score_text}): {score:.3f} [{low:.3f}, {high:.3f}]")
    return "\n".join(lines)
