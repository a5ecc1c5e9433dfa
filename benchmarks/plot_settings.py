"""Plot training settings side by side: each run's validation success before and after, one column per setting.

Reads each run folder's ``summary.json`` (``agentgym-bench train``). Per setting: a grey dot per run before training,
a coloured dot per run after it, joined by a line, and the paired interval of ``agentgym-bench compare-runs`` for
each setting against the first one in the caption printed below the plot's title.

    python benchmarks/plot_settings.py --title "slippery FrozenLake, group size" --out docs/img/ragen-group-size.png \\
        --setting "8 x 16" runs/g16-s0 runs/g16-s1 runs/g16-s2 --setting "32 x 4" runs/g4-s0 runs/g4-s1 runs/g4-s2

Used for docs/lab/2026-11-23-ragen-group-size-actions-per-turn.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from trainers.rl.compare import compare_runs, read_episodes  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", nargs="+", action="append", required=True, metavar=("LABEL", "RUN"),
                        help="a label, then the run folders of that setting (repeat; the first is the reference)")
    parser.add_argument("--title", default="", help="plot title")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    args = parser.parse_args(argv)
    if any(len(s) < 2 for s in args.setting):
        parser.error("each --setting needs a label and at least one run folder")
    settings = [(s[0], {w: [read_episodes(r, w) for r in s[1:]] for w in ("before", "after")}) for s in args.setting]
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(settings), 4))
    notes = []
    for x, (label, runs) in enumerate(settings):
        for i, (before, after) in enumerate(zip(runs["before"], runs["after"], strict=True)):
            b, a = sum(before) / len(before), sum(after) / len(after)
            dx = (i - (len(runs["after"]) - 1) / 2) * 0.12
            ax.plot([x + dx - 0.25, x + dx + 0.25], [b, a], color="0.7", lw=1)
            ax.scatter([x + dx - 0.25], [b], color="0.5", s=18, zorder=3)
            ax.scatter([x + dx + 0.25], [a], color=f"C{x}", s=30, zorder=3)
        if x:
            c = compare_runs(settings[0][1]["after"], runs["after"])
            e = c["episodes"]
            notes.append(f"{label}: {c['difference']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]")
    ax.set_xticks(range(len(settings)), [label for label, _ in settings])
    ax.set_ylabel("validation success (grey: before, colour: after)")
    caption = f"after vs {settings[0][0]}: " + "; ".join(notes) if notes else ""
    ax.set_title(f"{args.title}\n{caption}", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
