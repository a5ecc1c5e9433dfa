"""``agentgym-bench baselines``: every reference baseline, evaluated on the suite and put on a leaderboard.

The main job of the package. It runs, as separate processes, on at most ``--jobs`` cores at a time (default: the
number of CPU cores), each process on one torch thread except the warm start (``--from-scratch``), which every later
step waits for: it takes two of the cores, as two data-parallel processes (its stage configs' ``processes``, at
most ``--jobs``):

1. the warm start: the **published checkpoint** (the committed board's "default model + SFT" weights,
   ``leaderboards/<suite>/models/default-model-sft``, hash-checked against that entry: our "pretrained model", as
   Qwen2.5-0.5B-Instruct is RAGEN's), or with ``--from-scratch`` (or where no checkpoint is published) the small
   local default model (``init-model``) warm-started on oracle demonstrations in the recipe's stages (hours);
2. StarPO, StarPO-S and GiGPO from the warm start (``train``), the longest steps, started first, and two frozen runs
   (StarPO's and GiGPO's configs with learning rate 0: the warm start, never updated, on the same training rooms),
   the control that the summary pairs each RL run's training success with, iteration by iteration;
3. the oracle, a random agent, the warm start and the three trained models evaluated on the suite;
4. each results file submitted to the board as soon as it is written (verified by replay, and re-generation for the
   local models), the board rendered, and each baseline compared with the committed board's entry of the same name
   on the same seeds, for the suite and per env;
5. with ``--from-scratch`` (or ``--ma-suite``), the two-player suite (default ``agentgym-ma-v2``): the random and
   scripted Bargain policies and the warm-started model (the RL baselines are not trained on Bargain), each
   evaluated and submitted to a second board (``--ma-board``), compared the same way. From the published checkpoint
   it is skipped unless asked: that checkpoint never trained on Bargain (it makes no deal: payoff 0 in each of its
   1,200 matches), which, played and re-generated, take about 10 minutes.

Recipes: ``reference`` (the default) is the reference recipe: a warm start in three stages, each from the one
before (the bundled ``trainers/configs/warmstart-1.yaml``, ``-2``, ``-3``: ``agentgym-bench warmstart CONFIG``), and
the bundled ``trainers/configs/baseline-*.yaml`` as they are
(docs/results.md, "The recipe"). From the published checkpoint it takes about 16 minutes on 2 cores; with
``--from-scratch`` about three hours more (the job prints its estimate at the start and the time left as it goes). The
committed board in ``leaderboards/`` holds its runs, so the comparison printed at the end is a reproduction check (each
entry can also be re-evaluated with ``agentgym-bench reproduce``). ``short-sft`` is the check that the trainers
learn: the same three recipes from a start with room, the board's "default model + short SFT" (the first stage with a
third of its Sokoban 6x6 demonstrations, never shown Sokoban 8x8/2; GiGPO trains on the four envs it learned), about
15 minutes on 2 cores (with ``--from-scratch`` about 11 more), and the summary puts each trained model against its
start on the same test episodes. ``smoke`` checks the pipeline with tiny training runs (its numbers mean nothing;
the full-suite evaluations and their verification still take most of the job: 12-16 minutes on 2 cores). Logs of every
step are in ``<work>/logs/``; a step whose output exists is not run again (delete it to redo it), and a warm-start or
training step stopped part-way resumes from its last checkpoint when the job is run again. ``--dry-run`` prints the
steps, which of them are done or resume, their commands and the expected time, and runs nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from typing import Any

from agentgym_bench.benchmark.suites import DEFAULT_SUITE, MULTIAGENT_SUITE, load_suite
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.comparison import against_committed, against_start
from agentgym_bench.leaderboard.main_job import (
    RECIPES,
    plan,
    plan_text,
    published_checkpoint,
    run_jobs,
    training_report,
)
from agentgym_bench.paths import repository_root


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = __doc__.split("\n\n", 1)[1]
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="reference",
                        help="reference (the committed board's recipe; its warm start, with --from-scratch, takes "
                        "about three hours on 2 cores), short-sft (the same RL from the board's start with room: "
                        "a check that the trainers learn, about 15 minutes) or smoke (tiny training runs, numbers "
                        "meaningless; 12-16 minutes, mostly the full-suite evaluations) (default: %(default)s)")
    parser.add_argument("--work", default=None, help="folder for models, runs, results and logs "
                        "(default: runs/baselines-RECIPE)")
    parser.add_argument("--board", default=None, help="leaderboard folder to submit to (default: WORK/leaderboard)")
    parser.add_argument("--suite", default=DEFAULT_SUITE, help="benchmark suite (default: %(default)s)")
    parser.add_argument("--ma-suite", default=None,
                        help="two-player suite the warm start also plays ('none': skip it) (default: "
                        f"{MULTIAGENT_SUITE} with --from-scratch; none from the published checkpoint, which never "
                        "trained on Bargain: playing it takes about 10 minutes more)")
    parser.add_argument("--ma-board", default=None, help="leaderboard folder of the two-player suite "
                        "(default: WORK/leaderboard-ma)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="cores to use: steps run at once, one core each (the warm start two) "
                        "(default: the CPU count, %(default)s)")
    parser.add_argument("--committed", default="leaderboards", help="folder of the committed boards: the published "
                        "checkpoint and the entries to compare with (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the steps (which an earlier run finished, which resume from a checkpoint), their "
                        "commands and the expected time, and run nothing")
    parser.add_argument("--from-scratch", action="store_true",
                        help="make the warm start too (init-model and the recipe's warm-start stages, hours on a CPU) "
                        "instead of starting from the published checkpoint")


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise UserError(f"--jobs {args.jobs} must be >= 1")
    recipe = RECIPES[args.recipe]
    work = Path(args.work or f"runs/baselines-{args.recipe}")
    board = Path(args.board) if args.board else work / "leaderboard"
    ma_board = Path(args.ma_board) if args.ma_board else work / "leaderboard-ma"

    suite_name = load_suite(args.suite).name
    if not args.from_scratch and not Path(args.committed).is_dir():
        root = repository_root(".")
        where = (f"run the job from the repository's root folder, {root}" if root is not None else "they come with a "
                 "clone of the repository, not with the pip package: run from a clone")
        raise UserError(f"no folder {args.committed}, of the committed boards and the published checkpoint the job "
                        f"starts from: {where}, give --committed FOLDER, or make everything with --from-scratch "
                        "(about three hours more)")
    checkpoint = None if args.from_scratch else published_checkpoint(Path(args.committed), suite_name, recipe.start)
    if checkpoint is None and not args.from_scratch:
        print(f"[baselines] {Path(args.committed) / suite_name} has no published checkpoint (an entry "
              f"{recipe.start!r} with its weights in models/): making the warm start too, as with "
              "--from-scratch", flush=True)
    ma_suite = args.ma_suite or (MULTIAGENT_SUITE if checkpoint is None and recipe.ma_models != () else "none")
    ma_suite = None if ma_suite == "none" else ma_suite
    jobs = plan(recipe, work, board, args.suite, ma_board, ma_suite, max_parallel=args.jobs, checkpoint=checkpoint)
    started = time.monotonic()
    start = "from scratch" if checkpoint is None else f"from the published checkpoint {checkpoint} (sha256 checked)"
    print(f"[baselines] recipe {args.recipe}, {start}: {len(jobs)} steps, {args.jobs} at a time, work folder {work}",
          flush=True)
    if ma_suite is None and args.ma_suite is None:
        print(f"[baselines] the two-player suite is skipped (add --ma-suite {MULTIAGENT_SUITE} to play it too)",
              flush=True)
    if args.dry_run:
        print(plan_text(jobs, args.jobs))
        return 0
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated job stops its steps as Ctrl-C does
    try:
        run_jobs(jobs, work, args.jobs)
    except KeyboardInterrupt:
        for job in jobs:
            if job.status == "running" and job.process is not None:
                job.process.terminate()
        print("[baselines] stopped. Run the same command again to resume: finished steps are kept, and a stopped "
              "warm-start or training step continues from its last checkpoint.", flush=True)
        raise
    print(f"[baselines] all steps done in {(time.monotonic() - started) / 60:.1f} min", flush=True)
    trained = [recipe.board_name(name) for name in recipe.train]
    print(training_report(work, list(recipe.train)))
    print(against_committed(board, Path(args.committed), frozenset(trained), recipe.compared))
    print(against_start(board, recipe.start, trained))
    if args.recipe == "reference":
        print("From the published checkpoint RL has little left to gain here (docs/results.md, \"In short\"); to see "
              "the trainers learn, run them from a start with room: agentgym-bench baselines --recipe short-sft "
              "(about 15 minutes)")
    if ma_suite is not None:
        print(against_committed(ma_board, Path(args.committed), frozenset(trained), recipe.compared))
    return 0
