"""RAGEN's Echo Trap with the critic held equal: StarPO against StarPO + its variance filter, both critic-free GRPO.

RAGEN (arXiv 2504.20073, §4) reports that StarPO collapses (the Echo Trap) and that StarPO-S, whose first change is
to train only on the prompts with the largest in-group reward std, prevents or delays it. Our ``starpo_s`` preset
also adds a critic, so against ``starpo`` it changes two things at once; this study compares ``starpo`` with
``starpo_s_grpo`` (the filter, no KL, clip-higher; no critic), every other setting equal, over several training
seeds, evaluated on the same validation seeds (never the benchmark's held-out test seeds).

Each run is ``agentgym-bench train CONFIG seed=S output_dir=OUT/VARIANT-sS [...]``; the filtered runs keep one
optimiser step per iteration (``ppo_mini_batch_size`` = the trajectories the filter keeps). The per-episode validation
success before and after comes from each run's ``summary.json``; a finished run (one with a ``summary.json``) is not
run again. Then it prints, as Markdown: each run's before/after, the per-seed paired difference of the "after" rates
(filter - StarPO, :func:`agentgym_bench.stats.paired_difference` on the same validation seeds), the paired
difference of the seed-averaged per-episode outcomes (episode noise only), a t interval over the per-seed differences
(training-seed noise too), and the collapse warnings each run raised; and it plots the curves of every seed
(``--plot``). One CPU job at a time: runs are sequential.

    python benchmarks/echo_trap.py --config echo-starpo-frozenlake --seeds 0 1 2 --out runs/echo-study \
        --plot docs/img/echo-frozenlake.png

Results: docs/lab/2026-11-23-echo-trap.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agentgym_bench.stats import paired_difference
from trainers.rl.compare import compare_runs, read_episodes
from trainers.rl.config import load_config
from trainers.runtime.config_loading import resolve_config
from trainers.runtime.metrics import EchoTrapRule, read_metrics

VARIANTS = ("starpo", "starpo_s_grpo")
CURVES = [("reward/success", "training success"), ("val/success", "validation success"),
          ("reward/in_group_std", "in-group reward std"), ("loss/entropy", "entropy"),
          ("loss/grad_norm", "gradient norm (log)"), ("rollout/format_valid", "replies that parse")]


def variant_overrides(config_name: str, variant: str) -> list[str]:
    """The overrides that turn the config (a ``starpo`` one) into ``variant`` with one optimiser step per
    iteration."""
    if variant == "starpo":
        return ["preset=starpo"]
    filtered = load_config(resolve_config(config_name), [f"preset={variant}", "ppo_mini_batch_size=1",
                                                         "micro_batch_size=1"])
    kept = filtered.groups_kept * filtered.train_env_manager.group_size
    return [f"preset={variant}", f"ppo_mini_batch_size={kept}", f"micro_batch_size={kept}"]


def run_one(config_name: str, variant: str, seed: int, out: Path, extra: list[str]) -> Path:
    """Train one run unless its ``summary.json`` exists; returns its folder."""
    from trainers.rl.train import main

    folder = out / f"{variant}-s{seed}"
    if (folder / "summary.json").exists():
        return folder
    overrides = [*variant_overrides(config_name, variant), f"seed={seed}", f"output_dir={folder}", "progress=false",
                 *extra]
    print(f"agentgym-bench train {config_name} {' '.join(overrides)}", file=sys.stderr, flush=True)
    main(load_config(resolve_config(config_name), overrides))
    return folder


def report(folders: dict[tuple[str, int], Path], seeds: list[int]) -> str:
    """Markdown tables: every run, then the paired differences of the "after" rates (filter - StarPO)."""
    evals = {key: {k: read_episodes(folder, k) for k in ("before", "after")} for key, folder in folders.items()}
    lines = ["| run | before | after | warnings of the default rule (first iteration) | wall time |",
             "|---|---|---|---|---|"]
    for (variant, seed), folder in folders.items():
        records = read_metrics(folder / "metrics.jsonl")
        first = {key: steps[0] if steps else None for key, steps in EchoTrapRule().fired(records).items()}
        fired = ", ".join(f"{k.removeprefix('warn/')} ({s})" for k, s in first.items() if s is not None) or "none"
        before, after = (np.mean(evals[variant, seed][k]) for k in ("before", "after"))
        lines.append(f"| {variant} seed {seed} | {before:.3f} | {after:.3f} | {fired} | "
                     f"{records[-1].get('time/total', float('nan')):.0f} s |")
    base, other = VARIANTS
    lines += ["", f"| {other} - {base}, after | difference | 95% interval | McNemar p |", "|---|---|---|---|"]
    for seed in seeds:
        c = paired_difference(evals[base, seed]["after"], evals[other, seed]["after"])
        lines.append(f"| seed {seed} | {c.difference:+.3f} | [{c.low:+.3f}, {c.high:+.3f}] | {c.p_value:.2g} |")
    result = compare_runs([evals[base, s]["after"] for s in seeds], [evals[other, s]["after"] for s in seeds])
    e = result["episodes"]
    lines.append(f"| mean over seeds {', '.join(map(str, seeds))} (per episode) | {result['difference']:+.3f} | "
                 f"[{e['low']:+.3f}, {e['high']:+.3f}] | |")
    if "seeds" in result:  # the training seed as the unit: Student's t over the per-seed differences
        s = result["seeds"]
        lines.append(f"| mean of the {len(seeds)} per-seed differences (t interval) | {result['difference']:+.3f} | "
                     f"[{s['low']:+.3f}, {s['high']:+.3f}] | |")
    return "\n".join(lines)


def plot(folders: dict[tuple[str, int], Path], path: Path, title: str) -> None:
    """One panel per curve of :data:`CURVES`, every run a line: colour by variant, style by seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = dict(zip(VARIANTS, ("tab:red", "tab:blue"), strict=True))
    styles = ["-", "--", ":", "-.", (0, (6, 2, 1, 2, 1, 2))]
    fig, axes = plt.subplots(2, 3, figsize=(15, 6.4))
    seeds = sorted({seed for _, seed in folders})
    for ax, (key, label) in zip(axes.flat, CURVES, strict=True):
        for (variant, seed), folder in folders.items():
            points = [(r["step"], r[key]) for r in read_metrics(folder / "metrics.jsonl") if r.get(key) is not None]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, color=colors[variant], linestyle=styles[seeds.index(seed) % len(styles)],
                        linewidth=1.2, marker="o" if key.startswith("val/") else None, markersize=3,
                        label=f"{variant} seed {seed}")
        if key == "loss/grad_norm":  # a vanished gradient is 1e-3..1e-4: visible only on a log scale
            ax.set_yscale("log")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("iteration", fontsize=8)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=65)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="echo-starpo-frozenlake", help="a starpo config (file or bundled name)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds")
    parser.add_argument("--out", type=Path, default=Path("runs/echo-study"), help="folder of the runs")
    parser.add_argument("--plot", type=Path, help="write the curves of every run to this PNG")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="overrides for every run")
    args = parser.parse_args(argv)
    folders = {(variant, seed): run_one(args.config, variant, seed, args.out, args.overrides)
               for seed in args.seeds for variant in VARIANTS}
    print(report(folders, args.seeds))
    if args.plot:
        plot(folders, args.plot, f"{args.config} {' '.join(args.overrides)}: {VARIANTS[0]} (red) vs "
                                 f"{VARIANTS[1]} (blue), critic-free both")


if __name__ == "__main__":
    main()
