"""A board read against others, as the main job reports it: each entry against the committed board's entry of the
same name (a reproduction check), and each trained entry against the entry it started from (what training gained),
both paired on the same seeds (:func:`agentgym_bench.leaderboard.render.compare`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.suites import parse_suite
from agentgym_bench.leaderboard.board import load_stored, read_index
from agentgym_bench.leaderboard.render import compare, markdown


def against_committed(board: Path, committed_root: Path, trained: frozenset[str] = frozenset(),
                      compared: bool = True) -> str:
    """The board's table, where it is, and each baseline against the committed board's entry of the same name:
    the paired difference of the suite score on the same seeds (yours - committed; a two-player board: of the mean
    payoff). Entries named in ``trained`` are new training runs (:func:`verdict`); unless ``compared`` (a smoke
    run's models) they are not compared at all: they are not the committed models' recipe."""
    index = read_index(board)
    if index is None:
        return f"no board in {board}"
    suite = parse_suite(index["suite"])
    lines = [markdown(suite, index["submissions"]), f"your board: {board}/README.md, {board}/index.html"]
    committed = committed_root / suite.name
    theirs = read_index(committed)
    if theirs is None:
        return "\n".join([*lines, f"(no committed board in {committed} to compare with)"])
    lines.append(f"against the committed board {committed} (same seeds; paired difference of the score, yours - "
                 "committed, 95% interval over the episodes; a trained model here is a new training run, whose "
                 "difference from the committed one also holds what another training seed would change, which this "
                 "interval does not: one run against one shows agreement, not a gain):")
    by_name = {r["name"]: r for r in theirs["submissions"]}
    names = [e.name for e in suite.entries]
    table = ["| entry | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for record in index["submissions"]:
        other = by_name.get(record["name"])
        if record["name"] in trained and not compared:
            lines.append(f"  {record['name']}: this recipe's model, not the committed one's recipe: not compared")
            continue
        if other is None:
            lines.append(f"  {record['name']}: not on the committed board")
            continue
        paired = compare(suite, load_stored(committed, other), load_stored(board, record))  # yours - committed
        c = paired["suite"]
        lines.append(f"  {record['name']}: {record['summary']['score'][0]:.3f} vs {other['summary']['score'][0]:.3f}"
                     f", difference {c['difference']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]: "
                     f"{verdict(c, record['name'] in trained)}")
        table.append(f"| {record['name']} | " + " | ".join(
            f"{paired['entries'][n]['difference']:+.3f}{'*' if excludes_zero(paired['entries'][n]) else ''}"
            for n in names) + " |")
    if len(table) > 2:
        lines += ["per env (yours - committed; *: the 95% interval excludes 0):", *table]
    return "\n".join(lines)


def against_start(board: Path, start: str, trained: list[str]) -> str:
    """Each entry of ``trained`` against the entry ``start`` of the same board, paired on the same episodes (trained -
    start): the suite score's difference with its 95% interval over the episodes, and the envs whose own interval
    excludes 0 (not corrected for the comparisons). One training run each: a seed's draw, which this interval does
    not hold."""
    index = read_index(board)
    records = {r["name"]: r for r in (index or {}).get("submissions", [])}
    if index is None or start not in records:
        return f"(no entry {start!r} on {board} to compare the trained models with)"
    suite = parse_suite(index["suite"])
    first = load_stored(board, records[start])
    score = records[start]["summary"]["score"][0]
    lines = [f"each trained model against its start, {start!r} ({score:.3f}), paired on the same test episodes "
             "(trained - start, 95% interval over the episodes; one training seed, whose draw it does not hold):"]
    for name in trained:
        if name not in records:
            lines.append(f"  {name}: not on the board")
            continue
        paired = compare(suite, first, load_stored(board, records[name]))
        c = paired["suite"]
        moved = [f"{env} {e['difference']:+.3f}" for env, e in paired["entries"].items() if excludes_zero(e)]
        lines.append(f"  {name}: {records[name]['summary']['score'][0]:.3f}, {c['difference']:+.3f} "
                     f"[{c['low']:+.3f}, {c['high']:+.3f}]: {_from_start(c)}"
                     + (f" (per env, uncorrected: {', '.join(moved)})" if moved else ""))
    return "\n".join(lines)


def excludes_zero(c: dict[str, Any]) -> bool:
    """Whether the paired difference ``c``'s 95% interval lies wholly above or below 0."""
    return not c["low"] <= 0 <= c["high"]


def verdict(c: dict[str, Any], trained: bool = False) -> str:
    """"agrees" if ``c``'s paired interval holds 0, else "better" or "worse" ("higher", "lower" for a new training
    run against the committed one: another draw of its recipe)."""
    if not excludes_zero(c):
        return "agrees"
    if trained:  # another seed or CPU gives another run: a difference, not a better or worse recipe
        return (f"{'higher' if c['low'] > 0 else 'lower'} than the committed run, another draw of its recipe (the "
                'spread of its training seeds on this suite: docs/results.md, "Results on the v2 board")')
    return "better" if c["low"] > 0 else "worse"


def _from_start(c: dict[str, Any]) -> str:
    if not excludes_zero(c):
        return "no clear difference from its start"
    return "above its start" if c["low"] > 0 else "below its start"
