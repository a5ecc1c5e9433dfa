"""Train recipes over several seeds and evaluate each final model on the validation suite: the study behind the RL
recipes' claims (docs/lab/2026-11-28-rl-three-seeds.md).

``run`` trains every (recipe, seed) in the order given, ``--jobs`` at a time, each from ``--pretrain`` for the
recipe's iterations (``seed=N``, checkpoints every 50 iterations: these set the recipe's ``pretrain``, ``seed``,
``save_steps`` and ``output_dir`` whatever it says; give ``--pretrain`` for another start), then evaluates its
final model on ``agentgym-v2-validation`` with the main job's settings and ``eval --seed 0``. Everything goes
under ``--out``: ``NAME-sSEED/`` (the run folder), ``NAME-sSEED.log``, ``NAME-sSEED.made.json`` (the recipe, its
file's hash, the start and the overrides), ``val/NAME-sSEED.json.gz``. Run it again after a kill, or to add
seeds: a finished evaluation is kept, a run folder resumes from its last checkpoint; a run of that name made by
another command (a recipe file of the same name elsewhere, other overrides) is refused.

``test`` reads the test suite (``agentgym-v2``) once for each finished run's final model as the board publishes it
(weights rounded to bfloat16, ``publish-model``; into ``published/models/NAME-sSEED/``, or with ``--board-entry SEED
NAME`` that seed's into the board's own ``models/`` folder under the entry's name, so its file can be submitted as it
is), with the main job's settings and records (``--trained-by``, ``--selection``), into ``test/NAME-sSEED.json.gz``;
a file there is never re-read or overwritten: run it only for a recipe the validation study adopted.

``report`` prints, per recipe, the paired difference of each seed's model against ``--reference`` (a results file of
the start model, same suite and settings) and the mean over seeds with intervals over the episodes and over the
seeds, and per ``--pair CONTROL CANDIDATE`` the same for candidate minus control; ``--plot FILE`` also draws each
recipe's differences (a PNG: the mean over seeds with its interval over the episodes, and each seed). ``--also
FOLDER`` reads a recipe's files from another study's folder where ``--out`` lacks them (a control trained before).

``keep`` writes a study's per-episode outcomes (of ``--split``'s files and the reference's) and each run's curves
into one small file (``--to``, a ``*.outcomes.json.gz``) to commit beside the study's lab page: a run folder is a
machine's ignored files and is lost with the machine, the kept file is not; ``report`` and ``curves`` read a kept file
given as ``--also`` or ``--reference`` as they read the folder it was kept from.

``status`` says where each run stands (training: its iteration, rate and time left; or evaluated, or read on test);
``run`` prints the same for its runs in training every ``--every`` minutes.

``curves`` prints each recipe's validation curves from its runs' ``metrics.jsonl`` (the trainer's own validation
every ``eval_steps``, over all envs and per env, the mean over the seeds) and with ``--plot FILE`` draws them, the
seeds' range shaded: whether a run was still rising where it stopped.

    .venv/bin/python scripts/rl_study.py run --recipes baseline-starpo pilot-starpo-mix8-ds --seeds 0 1 2
    .venv/bin/python scripts/rl_study.py report --recipes baseline-starpo pilot-starpo-mix8-ds --seeds 0 1 2 \\
        --reference runs/rl-signal/val/default-model-sft.json.gz --pair baseline-starpo pilot-starpo-mix8-ds
    .venv/bin/python scripts/rl_study.py test --recipes pilot-gigpo-mix8 --seeds 0 1 2 \\
        --board-entry 0 "default model + SFT + GiGPO"
    .venv/bin/python scripts/rl_study.py report --split test --recipes pilot-gigpo-mix8 \\
        --reference leaderboards/agentgym-v2/submissions/default-model-sft.json.gz --plot runs/rl-study/test.png
    .venv/bin/python scripts/rl_study.py curves --recipes pilot-gigpo-mix8 --plot runs/rl-study/curves.png
    .venv/bin/python scripts/rl_study.py keep --split test --recipes pilot-gigpo-mix8 \\
        --reference leaderboards/agentgym-v2/submissions/default-model-sft.json.gz \\
        --to docs/lab/data/study-test.outcomes.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from agentgym_bench import stats
from agentgym_bench.benchmark.provenance import training_curves
from agentgym_bench.benchmark.results import Results
from agentgym_bench.benchmark.suites import Suite, load_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.main_job import SELECTION, cli
from agentgym_bench.leaderboard.render import PAIRED_REPS, entry_outcomes
from agentgym_bench.leaderboard.verify import read_checked
from agentgym_bench.leaderboard.weights import publish_model
from agentgym_bench.run_folder import SUMMARY, final_actor, progress_line

SUITE = "agentgym-v2-validation"
TEST_SUITE = "agentgym-v2"
EVAL = ("--prompt", "compact", "--history", "0", "--max-new-tokens", "16", "--seed", "0")
"""The main job's evaluation settings (``agentgym_bench/leaderboard/main_job.py``) and the pilots' sampling stream."""


def train_command(recipe: str, seed: int, pretrain: str, folder: Path, overrides: list[str]) -> list[str]:
    """The command that trains one run into ``folder``, or continues it from its last checkpoint after a kill."""
    return cli() + ["train", recipe, f"pretrain={pretrain}", f"output_dir={folder}", f"seed={seed}", "save_steps=50",
                    "resume_from_checkpoint=auto", "progress=false", *overrides]


def run_name(recipe: str, seed: int) -> str:
    """A run's name: the recipe's (a path's file name, without ``.yaml``; a dot inside stays) and the seed."""
    name = Path(recipe).name
    return f"{name.removesuffix('.yaml').removesuffix('.yml')}-s{seed}"


def say(line: str) -> None:
    """Print one whole line at once: ``run``'s threads share stdout (``print`` writes the newline apart, so lines
    of two threads could run together)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def made_by(recipe: str, pretrain: str, overrides: list[str]) -> dict[str, object]:
    """What makes a run what it is, recorded beside it (``NAME-sSEED.made.json``): the recipe as given, with its
    file's SHA-256 where it is a file, the start model and the overrides."""
    path = Path(recipe)
    return {"recipe": recipe, "recipe_sha256": sha256(path) if path.is_file() else None, "pretrain": pretrain,
            "overrides": list(overrides)}


def check_made_by(out: Path, name: str, made: dict[str, object]) -> None:
    """Record ``made`` for run ``name``, or refuse a command that would resume or skip a run made otherwise (two
    recipe files of one name, other overrides or another start): the run's name alone cannot tell them apart."""
    record = out / f"{name}.made.json"
    if not record.exists():
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(made, indent=1) + "\n")
        return
    earlier = json.loads(record.read_text())
    differs = [f"{key} {earlier.get(key)!r} then, {value!r} now" for key, value in made.items()
               if earlier.get(key) != value]
    if differs:
        raise UserError(f"{name} in {out} was made by another command ({'; '.join(differs)}): give this study its "
                        "own --out")


def failure_line(log: Path) -> str:
    """The last line a failed command wrote to its log: its one-line error."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()] if log.exists() else []
    return lines[-1] if lines else "(no output)"


def run_one(args: argparse.Namespace, recipe: str, seed: int) -> None:
    """Train (or resume) one run, then evaluate its final model; a finished evaluation is not redone."""
    name = run_name(recipe, seed)
    out = Path(args.out)
    check_made_by(out, name, made_by(recipe, args.pretrain, args.overrides))
    result = out / "val" / f"{name}.json.gz"
    if result.exists():
        say(f"{name}: evaluated already ({result})")
        return
    result.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with open(out / f"{name}.log", "a") as log:
        start = time.time()
        say(f"{name}: training")
        subprocess.run(train_command(recipe, seed, args.pretrain, out / name, args.overrides),
                       check=True, stdout=log, stderr=subprocess.STDOUT, env=env)
        say(f"{name}: trained in {(time.time() - start) / 60:.1f} min; evaluating")
        subprocess.run(cli() + ["eval", "--policy", f"hf:{out / name}", "--suite", SUITE, *EVAL, "--out", str(result),
                                "--overwrite"],
                       check=True, stdout=log, stderr=subprocess.STDOUT, env=env)
        say(f"{name}: done in {(time.time() - start) / 60:.1f} min")


def test(args: argparse.Namespace) -> int:
    """Read the test suite once per finished run: the main job's evaluation of a trained model, so that seed 0's
    file can go onto the board as it is."""
    out, failed = Path(args.out), 0
    entry_seed, entry_name = (int(args.board_entry[0]), args.board_entry[1]) if args.board_entry else (None, None)
    for recipe in args.recipes:
        for seed in args.seeds:
            name = run_name(recipe, seed)
            run_folder, result = out / name, out / "test" / f"{name}.json.gz"
            if result.exists():
                print(f"{name}: the test suite was read already ({result}); not read again", flush=True)
                continue
            if not (run_folder / SUMMARY).exists():
                print(f"{name}: not trained to the end yet ({run_folder}); run `rl_study.py run` first", flush=True)
                failed += 1
                continue
            result.parent.mkdir(parents=True, exist_ok=True)
            if seed == entry_seed:
                published = publish_model(final_actor(run_folder), Path(args.board), entry_name, replace=True)
            else:
                published = publish_model(final_actor(run_folder), out / "published", name, replace=True)
            print(f"{name}: reading the test suite with {published} (bfloat16)", flush=True)
            with open(out / f"{name}.log", "a") as log:
                subprocess.run(cli() + ["eval", "--policy", f"hf:{published}", "--suite", TEST_SUITE, *EVAL,
                                        "--trained-by", str(run_folder), "--selection", SELECTION["train"],
                                        "--out", str(result)],
                               check=True, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    return 1 if failed else 0


def run_status(out: Path, recipe: str, seed: int) -> str:
    """One run's state: its test read, its validation read, or :func:`progress_line` of its training."""
    name = run_name(recipe, seed)
    for split, said in (("test", "the test suite read"), ("val", "evaluated on validation")):
        if (out / split / f"{name}.json.gz").exists():
            return f"{name}: {said} ({out / split / f'{name}.json.gz'})"
    return f"{name}: {progress_line(out / name) or 'not started'}"


def status(args: argparse.Namespace) -> int:
    """Where each run of the study stands (from its files: another shell, or after a kill)."""
    for recipe in args.recipes:
        for seed in args.seeds:
            print(run_status(Path(args.out), recipe, seed))
    return 0


def run(args: argparse.Namespace) -> int:
    runs = [(recipe, seed) for recipe in args.recipes for seed in args.seeds]
    queue, lock, failed, done = list(runs), threading.Lock(), [], threading.Event()

    def monitor() -> None:  # a line per training run every --every minutes: long studies show where they are
        while not done.wait(args.every * 60):
            for recipe, seed in runs:
                line = progress_line(Path(args.out) / run_name(recipe, seed))
                if line not in (None, "finished"):
                    say(f"{run_name(recipe, seed)}: {line}")

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                recipe, seed = queue.pop(0)
            try:
                run_one(args, recipe, seed)
            except subprocess.CalledProcessError:
                log = Path(args.out) / f"{run_name(recipe, seed)}.log"
                failed.append(f"{recipe} seed {seed}")
                say(f"{recipe} seed {seed} failed: {failure_line(log)} (the whole output: {log})")
            except UserError as error:
                failed.append(f"{recipe} seed {seed}")
                say(f"{recipe} seed {seed}: {error}")

    threads = [threading.Thread(target=worker) for _ in range(args.jobs)]
    threading.Thread(target=monitor, daemon=True).start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    return 1 if failed else 0


def outcomes(results: Results, suite: Suite) -> dict[str, np.ndarray]:
    """``{entry: (n_e,) outcomes}`` of a results file, in seed order: what :func:`compare_seeds` pairs and ``keep``
    keeps."""
    return {e.name: entry_outcomes(results, e.name) for e in suite.entries}


def compare_seeds(suite, base: list, other: list) -> dict[str, dict[str, float]]:
    """``other`` (k models' :func:`outcomes`, one per training seed) against ``base`` (one, the start model's, or k
    paired with ``other`` in order), on the same episodes: for the suite score (``"score"``) and each entry, the
    mean over seeds of the paired difference, its 95% interval over the episodes (the per-episode differences
    averaged over the seeds, bootstrapped; stratified by entry for the score, as ``compare-results`` does for one
    pair) and, for k >= 2, its Student's t interval over the k per-seed differences. Returns name -> ``{"difference",
    "episodes_low", "episodes_high", "seeds_low", "seeds_high", "per_seed": [...]}``."""
    bases = base if len(base) == len(other) else base * len(other)
    names = [e.name for e in suite.entries]
    per_seed = {n: np.stack([o[n] - b[n] for b, o in zip(bases, other, strict=True)])
                for n in names}  # (k, n_e) each
    out = {}
    statistics = {"score": lambda d: stats.normalised_mean(d, suite.ceilings)}
    statistics |= {n: (lambda d, n=n: np.asarray(d[n]).mean(axis=-1)) for n in names}
    for name, statistic in statistics.items():
        seeds = [float(statistic({n: per_seed[n][s] for n in names})) for s in range(len(other))]
        point, low, high = stats.stratified_bootstrap({n: per_seed[n].mean(axis=0) for n in names}, statistic,
                                                      reps=PAIRED_REPS)
        row = {"difference": point, "episodes_low": low, "episodes_high": high, "per_seed": seeds}
        if len(seeds) >= 2:
            _, row["seeds_low"], row["seeds_high"] = stats.t_interval(seeds)
        out[name] = row
    return out


def comparison_lines(title: str, rows: dict[str, dict[str, float]]) -> list[str]:
    lines = [f"\n{title}", "| entry | per seed | mean | over episodes (95%) | over seeds (t, 95%) |",
             "|---|---|---|---|---|"]
    for name, r in rows.items():
        seeds = f"[{r['seeds_low']:+.3f}, {r['seeds_high']:+.3f}]" if "seeds_low" in r else "-"
        lines.append(f"| {name} | {', '.join(f'{d:+.3f}' for d in r['per_seed'])} | {r['difference']:+.3f} | "
                     f"[{r['episodes_low']:+.3f}, {r['episodes_high']:+.3f}] | {seeds} |")
    return lines


def plot_comparisons(path: Path, title: str, comparisons: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """One panel per entry that moved (the score first; entries whose every difference is 0 left out), all on one
    scale, one row per recipe: its mean difference with the 95% interval over the episodes (bar: green above 0, red
    below, grey across), each seed's difference (dots) and the mean (tick). ``comparisons``: recipe ->
    :func:`compare_seeds`'s rows. Returns the entries drawn, in panel order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recipes = list(comparisons)
    entries = [n for n in next(iter(comparisons.values())) if any(any(r[n]["per_seed"]) for r in comparisons.values())]
    fig, axes = plt.subplots(1, len(entries), figsize=(2.3 * len(entries) + 2.5, 0.45 * len(recipes) + 1.6),
                             sharex=True, sharey=True, squeeze=False)
    y = np.arange(len(recipes))[::-1]
    for ax, name in zip(axes[0], entries, strict=True):
        for row, recipe in zip(y, recipes, strict=True):
            r = comparisons[recipe][name]
            low, high = r["episodes_low"], r["episodes_high"]
            color = "tab:green" if low > 0 else "tab:red" if high < 0 else "tab:gray"
            ax.plot([low, high], [row, row], color=color, linewidth=3, solid_capstyle="butt")
            ax.plot(r["per_seed"], [row] * len(r["per_seed"]), "o", color="black", markersize=3)
            ax.plot([r["difference"]], [row], "|", color="black", markersize=12)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(y, recipes, fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.supxlabel("paired difference (bar: 95% interval over the episodes; dots: seeds; tick: mean)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return entries


KEPT = "agentgym-bench rl_study kept outcomes"
"""The ``kind`` of what ``keep`` writes: per-episode outcomes and curves, no transcripts."""

CURVE_POINTS = 100
"""Points a kept run's curve is thinned to (a 1,000-iteration run's curves then take a few kilobytes)."""


def is_kept(path: str | Path) -> bool:
    """Whether ``path`` names a kept study (``keep``'s file) rather than a study's folder or a results file."""
    return str(path).endswith(".outcomes.json.gz")


def read_kept(path: str | Path, suite: Suite | None = None, split: str | None = None) -> tuple[Suite, dict]:
    """A kept study and its suite, its outcomes as arrays. A :class:`UserError` naming the file where it is not
    one, was kept on another suite or split than asked, or its suite's entries or episode counts changed since."""
    try:
        with gzip.open(path, "rt") as f:
            kept = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a kept study ({error})") from None
    if not isinstance(kept, dict) or kept.get("kind") != KEPT:
        raise UserError(f"{path}: not a kept study (`rl_study.py keep` writes them)")
    try:
        mine = load_suite(kept["suite"])
        if (suite is not None and suite.name != mine.name) or (split is not None and kept["split"] != split):
            raise UserError(f"{path} keeps {kept['suite']}'s files (split {kept['split']}), not "
                            f"{(suite or mine).name}'s (split {split or kept['split']})")
        episodes = {e.name: e.episodes for e in mine.entries}
        if kept["episodes"] != episodes:
            raise UserError(f"{path}: {mine.name}'s entries or episode counts changed since it was kept")
        for record in [kept["reference"], *kept["runs"].values()]:
            record["outcomes"] = {n: np.asarray(record["outcomes"][n], dtype=float) for n in episodes}
            if any(len(record["outcomes"][n]) != k for n, k in episodes.items()):
                raise UserError(f"{path}: a model's outcomes do not match the suite's episode counts")
        kept["curves"] = dict(kept["curves"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UserError(f"{path}: a kept study without its fields ({type(error).__name__}: {error})") from None
    return mine, kept


def from_sources(args: argparse.Namespace, recipe: str, name: str, read_file, read_kept_runs,
                 missing: str) -> list | None:
    """``recipe``'s per-seed items from the first of ``--out`` and the ``--also`` sources that holds every seed's:
    in a study's folder the file ``name`` (``{run}`` standing for the run's name) through ``read_file(path)``; in a
    kept study the run's item in ``read_kept_runs(path)`` (run name -> item). ``None`` where no source holds them
    all, after printing ``missing`` and ``--out``'s paths that are absent."""
    runs = [run_name(recipe, seed) for seed in args.seeds]
    for source in [args.out, *(args.also or [])]:
        if is_kept(source):
            kept = read_kept_runs(source)
            if all(run in kept for run in runs):
                return [kept[run] for run in runs]
            continue
        paths = [Path(source) / name.format(run=run) for run in runs]
        if all(path.exists() for path in paths):
            return [read_file(path) for path in paths]
    absent = [Path(args.out) / name.format(run=run) for run in runs]
    print(f"\n{recipe}: {missing}: {', '.join(str(p) for p in absent if not p.exists())}")
    return None


def curves(args: argparse.Namespace) -> int:
    """Each recipe's validation curves from its runs' ``metrics.jsonl``: the trainer's own validation success, over
    all envs and per env, the mean over the seeds at each iteration they all logged (printed, and drawn into
    ``--plot`` with the seeds' range shaded)."""
    runs = {}
    try:
        for recipe in args.recipes:
            found = from_sources(args, recipe, "{run}/metrics.jsonl", training_curves,
                                 lambda source: read_kept(source)[1]["curves"], "no metrics yet")
            if found is not None:
                runs[recipe] = found
    except UserError as error:
        print(f"rl_study curves: {error}", file=sys.stderr)
        return 2
    if not runs:
        print("rl_study curves: no recipe has a metrics.jsonl for every seed", file=sys.stderr)
        return 2
    by_recipe = {recipe: seed_means(records) for recipe, records in runs.items()}
    for recipe, by_key in by_recipe.items():
        print(f"\n{recipe} (seeds {', '.join(map(str, args.seeds))}): validation success, mean over the seeds")
        for key, (steps, mean, _, _) in by_key.items():
            print(f"  {key_label(key)}: " + ", ".join(f"{s}: {m:.3f}" for s, m in zip(steps, mean, strict=True)))
    if args.plot:
        plot_curves(Path(args.plot), by_recipe)
        print(f"\nplot: {args.plot}")
    return 0


def seed_means(runs: list[dict[str, list[list[float]]]]) -> dict[str, tuple[list, list, list, list]]:
    """Per validation success key (``val/success`` first, then each env's): the iterations every seed logged it at,
    and there the mean, minimum and maximum over the seeds. ``runs``: each seed's
    :func:`~agentgym_bench.benchmark.provenance.training_curves`."""
    keys = sorted({k for run in runs for k in run if k.startswith("val/") and k.endswith("success")},
                  key=lambda k: (k != "val/success", k))
    out = {}
    for key in keys:
        per_seed = [{step: value for step, value in run.get(key, [])} for run in runs]
        steps = sorted(set.intersection(*(set(d) for d in per_seed)))
        values = np.array([[d[s] for s in steps] for d in per_seed]).reshape(len(per_seed), len(steps))
        out[key] = (steps, values.mean(0).tolist(), values.min(0).tolist(), values.max(0).tolist())
    return out


def key_label(key: str) -> str:
    """``val/success`` -> ``all envs``; ``val/AgentSokoban-v0/success`` -> ``AgentSokoban-v0``."""
    return "all envs" if key == "val/success" else key.split("/")[1]


def plot_curves(path: Path, curves: dict[str, dict[str, tuple]]) -> None:
    """One panel per validation key, one line per recipe (the mean over its seeds, their range shaded), each recipe
    in one colour on every panel (a recipe without a key leaves its panel; colours must not shift to the next)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(k for by_key in curves.values() for k in by_key))
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.0), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for i, (recipe, by_key) in enumerate(curves.items()):
            if key in by_key:
                steps, mean, low, high = by_key[key]
                ax.plot(steps, mean, marker="o", markersize=2.5, linewidth=1.3, label=recipe, color=f"C{i}")
                ax.fill_between(steps, low, high, color=f"C{i}", alpha=0.15, linewidth=0)
        ax.set_title(key_label(key), fontsize=9)
        ax.set_xlabel("iteration", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("validation success", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def read_reference(path: str, split: str) -> tuple[Suite, dict[str, np.ndarray], Results | None]:
    """``--reference``: its suite, its :func:`outcomes` and the results file the study's files are checked against
    (``None`` for a kept study's reference, kept whole: then the files must be whole too)."""
    if is_kept(path):
        suite, kept = read_kept(path, None, split)
        return suite, kept["reference"]["outcomes"], None
    results, suite = read_checked(path, None)
    return suite, outcomes(results, suite), results


def read_whole(path: str, suite: Suite, base: Results | None) -> Results:
    """A study's results file checked against the reference ``base``, or, where the reference is kept (``None``),
    as a whole-suite read (``keep`` keeps no quick checks)."""
    results = read_checked(path, suite, base)[0]
    if base is None and results.metadata.get("quick_check") is not None:
        raise UserError(f"{path} is a quick check; the kept reference is the whole suite")
    return results


def report(args: argparse.Namespace) -> int:
    """Per recipe: its seeds against the reference; per pair: candidate minus control, seed by seed."""
    try:
        suite, reference, base = read_reference(args.reference, args.split)
        found = {}
        paired = [r for pair in args.pair or [] for r in pair if r not in args.recipes]
        for recipe in [*args.recipes, *dict.fromkeys(paired)]:  # a pair's recipes are read even if not listed
            files = from_sources(args, recipe, f"{args.split}/{{run}}.json.gz",
                                 lambda path: outcomes(read_whole(str(path), suite, base), suite),
                                 lambda source: {run: kept["outcomes"] for run, kept in
                                                 read_kept(source, suite, args.split)[1]["runs"].items()},
                                 "not evaluated yet")
            if files is not None:
                found[recipe] = files
    except UserError as error:
        print(f"rl_study report: {error}", file=sys.stderr)
        return 2
    lines, drawn = [], {}
    for recipe, files in found.items():
        if recipe not in args.recipes:
            continue
        drawn[recipe] = compare_seeds(suite, [reference], files)
        lines += comparison_lines(f"{recipe} (seeds {', '.join(map(str, args.seeds))}) - {Path(args.reference).name}",
                                  drawn[recipe])
    for control, candidate in args.pair or []:
        if control not in found or candidate not in found:
            lines.append(f"\n{candidate} - {control}: not both evaluated for seeds {args.seeds}")
        else:
            lines += comparison_lines(f"{candidate} - {control}, seed by seed",
                                      compare_seeds(suite, found[control], found[candidate]))
    print("\n".join(lines))
    if args.plot and drawn:
        plot_comparisons(Path(args.plot), f"each recipe - {Path(args.reference).name}, {args.split}, seeds "
                         f"{', '.join(map(str, args.seeds))}", drawn)
        print(f"\nplot: {args.plot}")
    return 0


def plain(values: np.ndarray) -> list:
    """Outcomes as JSON numbers: integers where they are whole (success), else floats (a match's payoff)."""
    return [int(v) if float(v).is_integer() else float(v) for v in values]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keep(args: argparse.Namespace) -> int:
    """Keep the study's ``--split`` files (each finished run's per-episode outcomes, with the file's SHA-256) and
    the reference's, and each run's curves (:data:`CURVE_POINTS` points), in ``--to``; an existing kept file on the
    same suite, split and reference gains the runs (a run kept again is replaced)."""
    to = Path(args.to)
    try:
        if not is_kept(to):
            raise UserError(f"--to {to}: a kept study's name ends in .outcomes.json.gz")
        reference, suite = read_checked(args.reference, None)
        if reference.metadata.get("quick_check") is not None:
            raise UserError(f"{args.reference} is a quick check; keep whole-suite reads")
        ref = {"file": Path(args.reference).name, "sha256": sha256(Path(args.reference)),
               "outcomes": {n: plain(v) for n, v in outcomes(reference, suite).items()}}
        kept = {"kind": KEPT, "suite": suite.name, "split": args.split,
                "episodes": {e.name: e.episodes for e in suite.entries}, "reference": ref, "runs": {}, "curves": {}}
        if to.exists():
            with gzip.open(to, "rt") as f:
                kept = json.load(f)
            read_kept(to, suite, args.split)  # the file's own checks
            if kept["reference"]["outcomes"] != ref["outcomes"]:
                raise UserError(f"{to} was kept against another reference than {args.reference}")
        added, missing = [], []
        for recipe in args.recipes:
            for seed in args.seeds:
                name = run_name(recipe, seed)
                path = Path(args.out) / args.split / f"{name}.json.gz"
                if not path.exists():
                    missing.append(str(path))
                    continue
                results = read_whole(str(path), suite, reference)
                kept["runs"][name] = {"file": path.name, "sha256": sha256(path),
                                      "outcomes": {n: plain(v) for n, v in outcomes(results, suite).items()}}
                metrics = Path(args.out) / name / "metrics.jsonl"
                if metrics.exists():
                    kept["curves"][name] = training_curves(metrics, CURVE_POINTS)
                added.append(name)
    except UserError as error:
        print(f"rl_study keep: {error}", file=sys.stderr)
        return 2
    if missing:
        print(f"not evaluated yet, not kept: {', '.join(missing)}")
    if not added:
        print(f"rl_study keep: nothing to keep under {args.out}/{args.split}", file=sys.stderr)
        return 2
    to.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(to, "wb", mtime=0) as f:
        f.write(json.dumps(kept, separators=(",", ":"), sort_keys=True).encode())
    print(f"kept {len(added)} run(s) ({', '.join(added)}) and the reference in {to} "
          f"({to.stat().st_size / 1024:.0f} KiB; {len(kept['runs'])} run(s) in all)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "test", "report", "curves", "keep", "status"):
        p = sub.add_parser(name)
        p.add_argument("--recipes", nargs="+", required=True, help="bundled recipe names or YAML files")
        p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds (default: 0 1 2)")
        p.add_argument("--out", default="runs/rl-study", help="where runs and results go (default: runs/rl-study)")
    test_parser = sub.choices["test"]
    test_parser.add_argument("--board-entry", nargs=2, metavar=("SEED", "NAME"),
                             help="publish SEED's model as the board entry NAME (replacing its weights) and read it "
                                  "from there")
    test_parser.add_argument("--board", default=str(Path("leaderboards") / TEST_SUITE),
                             help="the board of --board-entry (default: %(default)s)")
    report_parser = sub.choices["report"]
    keep_parser = sub.choices["keep"]
    for p in (report_parser, keep_parser):
        p.add_argument("--reference", required=True, help="results file of the start model (same suite and settings: "
                       "e.g. runs/rl-signal/val/default-model-sft.json.gz); for report, a kept study also (its own)")
        p.add_argument("--split", choices=("val", "test"), default="val",
                       help="which suite's files: val (run's, the default) or test (test's)")
    keep_parser.add_argument("--to", required=True, metavar="FILE",
                             help="the kept study, *.outcomes.json.gz (e.g. docs/lab/data/NAME-test.outcomes.json.gz)")
    report_parser.add_argument("--pair", nargs=2, action="append", metavar=("CONTROL", "CANDIDATE"),
                               help="also compare CANDIDATE's seeds with CONTROL's, seed by seed (repeatable)")
    report_parser.add_argument("--plot", metavar="FILE", help="also draw each recipe's differences into FILE (PNG)")
    curves_parser = sub.choices["curves"]
    curves_parser.add_argument("--plot", metavar="FILE", help="also draw the curves into FILE (PNG)")
    for p in (report_parser, curves_parser):
        p.add_argument("--also", action="append", metavar="FOLDER",
                       help="another study's --out, or a kept study (*.outcomes.json.gz), to read a recipe's files "
                            "from where --out lacks them, e.g. a control trained by an earlier study (repeatable)")
    run_parser = sub.choices["run"]
    run_parser.add_argument("--pretrain", default="leaderboards/agentgym-v2/models/default-model-sft",
                            help="the start model, in place of the recipe's pretrain (default: the published "
                            "checkpoint)")
    run_parser.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default: 2)")
    run_parser.add_argument("--every", type=float, default=10,
                            help="minutes between progress lines of the runs in training (default: 10)")
    run_parser.add_argument("overrides", nargs="*", help="config overrides for every run (key=value)")
    args = parser.parse_args()
    return {"run": run, "test": test, "report": report, "curves": curves, "keep": keep,
            "status": status}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
