"""``agentgym-bench compare-runs``: is one training setting better than another, over several training seeds?

Each run folder's ``summary.json`` keeps every validation episode's success before and after training, in the
validation groups' order (:func:`trainers.rl.train._finish`), so runs with the same validation set can be paired on the
same seeds. Two intervals answer two questions:

- **over episodes**: each episode's success averaged over the runs of a setting, then the paired bootstrap of
  :func:`agentgym_bench.stats.paired_difference` over the episodes (the noise of the evaluation: which maps,
  which samples);
- **over training seeds** (when both settings have the same number of runs, paired by training seed where both
  sides hold the same seeds, whatever order they are given in, else in the order given, which the output says):
  Student's t interval of the per-seed differences of the "after" rates (the noise of training).

A claim about a setting needs both: the first can be narrow while three training seeds disagree. With
``--which gain`` the runs are compared with their own start model instead (each run's "before" as its base, no
``--base``): does a setting gain over its start, over the seeds?

With ``--frozen RUN`` the runs are read on their own training rooms instead of on validation: each run's training
success minus that of a frozen run (the same config at ``learning_rate: 0``) over the second half of its iterations
(:func:`agentgym_bench.run_folder.against_frozen`), per env and for all envs; with ``--base``, the runs minus the
base runs on the same rooms, paired run by run. The interval is Student's t over the runs (the training seeds), or
with one run the normal interval over its iterations. No validation or test episode is read.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentgym_bench import run_folder
from agentgym_bench.errors import UserError
from agentgym_bench.stats import mean_interval, paired_difference, t_interval


def compare_runs(base: Sequence[Sequence[float]], other: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Compare the runs ``other`` (shape ``(k, n)``: k runs, n validation episodes, 0/1) with ``base`` (``(m, n)``).

    Returns:
        ``base`` and ``other`` (each run's success rate), ``difference`` (mean of ``other`` minus mean of ``base``),
        ``episodes`` (``low``, ``high``: the paired bootstrap over the n episodes of the per-episode means) and,
        when k == m >= 2, ``seeds`` (``low``, ``high``, ``differences``: the t interval over the k paired runs).

    Raises:
        ValueError: no runs, or runs of different lengths.
    """
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or not a.size or not b.size or a.shape[1] != b.shape[1]:
        raise ValueError(f"runs of one validation set are needed on both sides, got shapes {a.shape} and {b.shape}")
    c = paired_difference(a.mean(axis=0), b.mean(axis=0))
    out: dict[str, Any] = {"base": a.mean(axis=1).tolist(), "other": b.mean(axis=1).tolist(),
                           "difference": c.difference, "episodes": {"low": c.low, "high": c.high}}
    if len(a) == len(b) >= 2:
        differences = (b.mean(axis=1) - a.mean(axis=1)).tolist()
        _, low, high = t_interval(differences)
        out["seeds"] = {"low": low, "high": high, "differences": differences}
    return out


def read_episodes(run: str | Path, which: str) -> list[int]:
    """One run folder's per-episode validation successes, ``which`` = ``before`` or ``after``."""
    path = Path(run) / run_folder.SUMMARY
    summary = run_folder.read_summary(run)
    if summary is None:
        raise UserError(f"{path} does not exist: is it a finished training run?")
    if "val_episodes" not in summary:
        raise UserError(f"{path} has no per-episode validation results (runs from before they were recorded)")
    return summary["val_episodes"][which]


PAIRED_ON = ("val_env_manager", "val_seed_start")
"""Config keys that fix a run's validation episodes: runs compared on validation must agree on them."""


def check_comparable(base: Sequence[str | Path], runs: Sequence[str | Path]) -> None:
    """Refuse validation comparisons that cannot be paired: runs validated on other episodes (:data:`PAIRED_ON`), a
    run named twice in ``--base`` or ``--runs``, or two runs of one training seed among several (an interval "over
    the training seeds" needs as many seeds as runs)."""
    configs: dict[str | Path, dict[str, Any]] = {}
    for run in [*base, *runs]:
        if not (Path(run) / run_folder.CONFIG).is_file():
            raise UserError(f"{run} has no {run_folder.CONFIG}: is it a training run's folder?")
        configs[run] = run_folder.read_config(run)
    for name, group in (("--base", base), ("--runs", runs)):
        where = [Path(r).resolve() for r in group]
        if len(set(where)) < len(where):
            raise UserError(f"{name} names a run more than once ({', '.join(map(str, group))}): each training seed's "
                            "run once")
        seeds = [configs[r].get("seed") for r in group]
        if len(group) > 1 and len(set(seeds)) < len(seeds):
            raise UserError(f"{name} has training seeds {seeds}: runs compared over training seeds need one run per "
                            "seed")
    first = (base or runs)[0]
    for other in [*base, *runs]:
        differs = [k for k in PAIRED_ON if configs[other].get(k) != configs[first].get(k)]
        if differs:
            raise UserError(f"{other} was not validated on the episodes of {first} ({', '.join(differs)} differ): "
                            "compare runs with the same validation set")


def pair_by_seed(base: Sequence[str | Path], runs: Sequence[str | Path]) -> tuple[list[str | Path], str]:
    """``base`` in the order that pairs each of ``runs`` with the base run of its training seed (their
    ``config.yaml``'s ``seed``), and a line saying how they were paired: by seed where both sides hold the same seeds
    (whatever order they were given in), else in the order given, or not at all where the counts differ."""
    if len(base) != len(runs):
        return list(base), (f"no interval over the training seeds: {len(base)} base run(s) and {len(runs)} run(s), "
                            "and it pairs runs seed by seed")
    seed = {r: run_folder.read_config(r).get("seed") for r in [*base, *runs]}
    by_seed = {seed[r]: r for r in base}
    if sorted(by_seed, key=str) == sorted((seed[r] for r in runs), key=str) and len(by_seed) == len(base):
        ordered = [by_seed[seed[r]] for r in runs]
        moved = " (reordered from the order given)" if ordered != list(base) else ""
        return ordered, f"paired by training seed{moved}: {', '.join(str(seed[r]) for r in runs)}"
    pairs = ", ".join(f"{seed[a]} with {seed[b]}" for a, b in zip(base, runs, strict=True))
    return list(base), f"paired in the order given, the seeds differ: base seed {pairs}"


def on_own_rooms(runs: Sequence[str | Path], frozen: str | Path, base: Sequence[str | Path] = ()) -> list[str]:
    """The ``--frozen`` report: per env and for all envs, each run's training success on its own rooms minus the
    frozen run's (minus, with ``base``, the same for the base run of the same place in the order), its mean and 95%
    interval (t over the runs; with one run, normal over its iterations). Raises :class:`UserError` naming a run
    that cannot be paired."""
    def read(run: str | Path) -> tuple[list[int], dict[str, list[float]]]:
        try:
            return run_folder.against_frozen(run, frozen)
        except ValueError as e:
            raise UserError(str(e)) from None
    other, ref = [read(r) for r in runs], [read(r) for r in base]
    if ref and len(ref) != len(other):
        raise UserError(f"--base has {len(ref)} runs and --runs {len(other)}: with --frozen they are paired run by "
                        "run, in the order given")
    steps = other[0][0]
    if any(read_steps != steps for read_steps, _ in other + ref):
        raise UserError("the runs logged different iterations; compare finished runs of one config's rooms")
    keys = [k for k in other[0][1] if all(k in d for _, d in other + ref)]
    what = "minus --base's, paired run by run" if ref else "minus the frozen run's"
    how = f"t over the {len(other)} runs" if len(other) > 1 else "normal over the iterations of one run"
    lines = [f"training success on the runs' own rooms (those of the frozen run {frozen}) {what}, iterations "
             f"{steps[0]}-{steps[-1]}; mean [95% CI, {how}], then each run's:"]
    for key in keys:
        if any(len(d[key]) != len(other[0][1][key]) for _, d in other + ref):
            raise UserError(f"the runs logged {key} at different iterations; compare finished runs of one config's "
                            "rooms")
        series = [np.asarray(d[key]) - (np.asarray(ref[i][1][key]) if ref else 0.0) for i, (_, d) in enumerate(other)]
        per_run = [float(x.mean()) for x in series]
        mean, low, high = t_interval(per_run) if len(per_run) > 1 else mean_interval(series[0].tolist())
        lines.append(f"  {key:<26} {mean:+.3f} [{low:+.3f}, {high:+.3f}]   {', '.join(f'{x:+.3f}' for x in per_run)}")
    return lines


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", nargs="+", metavar="RUN",
                        help="run folders of the reference setting (one per training seed; not with --which gain)")
    parser.add_argument("--runs", nargs="+", required=True, metavar="RUN",
                        help="run folders of the setting compared with it, in the same seed order")
    parser.add_argument("--which", choices=("after", "before", "gain"),
                        help="compare the evaluations after training (default) or before it; gain: each of --runs "
                        "after training with itself before it")
    parser.add_argument("--frozen", metavar="RUN",
                        help="read training success on the runs' own rooms instead of validation: each run minus this "
                        "frozen run (the same config with learning_rate=0), over the second half of the iterations; "
                        "with --base, the runs minus the base runs on the same rooms")


def run(args: argparse.Namespace) -> int:
    if args.frozen:
        if args.which:
            raise UserError("--which reads validation; --frozen reads training success on the runs' own rooms")
        print("\n".join(on_own_rooms(args.runs, args.frozen, args.base or ())))
        return 0
    args.which = args.which or "after"
    if args.which == "gain":
        if args.base:
            raise UserError("--which gain compares each run with its own start and takes no --base")
        base_runs, labels = args.runs, ("before", "after")
    elif not args.base:
        raise UserError("give --base RUN ... (the reference setting's runs), or --which gain")
    else:
        base_runs, labels = args.base, (args.which, args.which)
    episodes = {r: read_episodes(r, labels[0]) for r in base_runs}
    other = [read_episodes(r, labels[1]) for r in args.runs]
    check_comparable([] if args.which == "gain" else base_runs, args.runs)
    base_runs, pairing = pair_by_seed(base_runs, args.runs)
    base = [episodes[r] for r in base_runs]
    lengths = {len(x) for x in base + other}
    if len(lengths) > 1:
        raise UserError(f"the runs were validated on different numbers of episodes ({sorted(lengths)}); "
                        "compare runs with the same val_env_manager")
    result = compare_runs(base, other)
    rates = lambda xs: ", ".join(f"{x:.3f}" for x in xs)  # noqa: E731
    print(f"base ({len(base)} runs), {labels[0]}: {rates(result['base'])}")
    print(f"runs ({len(other)} runs), {labels[1]}: {rates(result['other'])}")
    e = result["episodes"]
    print(f"difference {result['difference']:+.3f}; over the {lengths.pop()} episodes (paired bootstrap of the "
          f"per-episode means) 95% CI [{e['low']:+.3f}, {e['high']:+.3f}]")
    if "seeds" in result:
        s = result["seeds"]
        print(f"over the {len(other)} training seeds (t) 95% CI [{s['low']:+.3f}, {s['high']:+.3f}]; per seed "
              f"{', '.join(f'{d:+.3f}' for d in s['differences'])}")
    if args.which != "gain" and len(other) > 1:
        print(pairing)
    return 0
