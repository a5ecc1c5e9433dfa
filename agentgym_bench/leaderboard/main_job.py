"""The main job (``agentgym-bench baselines``, whose ``--help`` tells what it does): its recipes (:data:`RECIPES`),
the plan of steps a recipe makes (:func:`plan`), the runner that runs them on at most ``--jobs`` cores with progress
and time estimates (:func:`run_jobs`), and what the job reports at its end (:func:`training_report`; the comparisons
with the committed board are :mod:`~agentgym_bench.leaderboard.comparison`'s)."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentgym_bench import run_folder
from agentgym_bench.benchmark.provenance import published_entry
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.board import read_index
from agentgym_bench.leaderboard.folder import slugify
from agentgym_bench.leaderboard.weights import published_path
from agentgym_bench.processes import end_with_parent
from agentgym_bench.rollout.specs import model_sha256

TRAINER_CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"
"""The trainers' bundled configs (``trainers/configs/``, shipped beside this package), read here as files: the warm
start's stages (``warmstart-*.yaml``) say how many processes each takes."""


@dataclass(frozen=True)
class Recipe:
    """What each step of the main job runs.

    Attributes:
        warmstart: the warm start's stages: a bundled config of ``agentgym-bench warmstart`` for each
            (``trainers/configs/<name>.yaml``); the first starts from the default model, each later one from the
            model of the stage before.
        train: algorithm name on the board -> (bundled config, ``key=value`` overrides).
        model_eval: ``agentgym-bench eval`` arguments for the default model and its trained versions.
    """

    warmstart: tuple[str, ...]
    train: dict[str, tuple[str, tuple[str, ...]]]
    start: str = "default model + SFT"
    """The warm start's name on the board, whose published weights the trainers start from unless the job runs
    ``--from-scratch``; each trained model is ``"<start> + <algorithm>"`` (:meth:`board_name`)."""
    stage_overrides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``key=value`` overrides of a warm-start stage's bundled config, by the config's name."""
    model_eval: tuple[str, ...] = ("--prompt", "compact", "--history", "0", "--max-new-tokens", "16")
    ma_model_eval: tuple[str, ...] = ("--max-new-tokens", "16")
    """``agentgym-bench eval`` arguments of the models on the two-player suite (full history: Bargain states the
    player's values in the first observation only)."""
    ma_models: tuple[str, ...] | None = None
    """Models that also play the two-player suite (``None``: all; the smoke recipe plays the warm start only, with
    4-token replies: its barely trained model fills any budget, and each model's 1,200 matches take minutes on a
    CPU)."""
    minutes: dict[str, float] = field(default_factory=dict)
    """Minutes a step takes on one of the reference machine's 2 cores (the warm start's stages: on both), by the
    step's name or, failing that, its first word: what the time estimates start from (:func:`minutes_left`)."""
    compared: bool = True
    """Whether the final report compares its trained models with the committed board's entries of the same names
    (a smoke run's models, trained for two iterations on toy batches, are not theirs to compare)."""

    def board_name(self, stem: str) -> str:
        """A results file's stem -> its name on the board: the warm start's, ``"<start> + StarPO"`` and so on for
        the trained models, a model-free policy's own."""
        if stem == "warmstart":
            return self.start
        return f"{self.start} + {ALGORITHMS[stem]}" if stem in ALGORITHMS else stem


TRAINED = {"starpo": "baseline-starpo", "starpo-s": "baseline-starpo_s", "gigpo": "baseline-gigpo"}
"""Board stem -> bundled config of the reference baselines (trainers/configs/baseline-*.yaml;
docs/results.md, "RL: the three `baseline-*.yaml` configs")."""
ALGORITHMS = {"starpo": "StarPO", "starpo-s": "StarPO-S", "gigpo": "GiGPO"}
"""Board stem -> the algorithm's name in a trained model's board name."""
FROZEN = {"starpo": "starpo", "starpo-s": "starpo", "gigpo": "gigpo"}
"""Trained run -> the trained run whose config, with ``learning_rate=0``, makes its frozen run (``runs/frozen-<it>``:
the start model on the same training rooms, what the final summary pairs each run's training success with). StarPO-S
plays StarPO's rooms: their configs differ in the preset alone."""
SHORT_SFT_ENVS = "[AgentSokoban-v0, AgentFrozenLake-v0, AgentFrozenLakeNoSlip-v0, AgentBandit-v0]"
"""The envs the short SFT learned (no Sokoban 8x8/2), which GiGPO trains and validates on from it."""
REFERENCE_MINUTES = {
    "init-model": 0.1, "warmstart stage 1": 35.0, "warmstart stage 2": 56.0, "warmstart": 55.0,
    "eval oracle": 0.3, "eval random": 0.2, "eval": 0.8, "submit oracle": 0.2, "submit random": 0.1, "submit": 0.8,
    "train starpo": 4.5, "train starpo-s": 4.0, "train gigpo": 6.5, "train frozen-starpo": 2.1,
    "train frozen-gigpo": 3.6,
    "eval-ma random": 0.3, "eval-ma scripted": 0.3, "eval-ma": 5.2, "submit-ma random": 0.2,
    "submit-ma scripted": 0.2, "submit-ma": 5.2}
"""The reference recipe's steps on the reference machine (2 cores; docs/results.md, "Wall time"): measured in the
main job of 2026-11-27 (from the published checkpoint, 17.8 minutes for its steps; the trainers' steps again on
2026-11-28, 12.3 minutes for all steps, once identical rows were shared; on 2026-11-29 with GiGPO's five-env
recipe, 14.9 minutes for all steps on a quiet machine; GiGPO's training again on 2026-12-01 without its KL loss, 6.5
minutes, 12.0 for all steps; the frozen runs on 2026-12-01, 14.4 minutes for all steps) and the checkpoint's 1,200
two-player matches (5.2 minutes; their re-generation taken as long), and for the warm start's stages on two threads
in earlier runs; ``submit`` of a local model re-generates every reply."""
SELECTION = {"warmstart": "the last stage of the recipe's warm start, as the recipe ends (no checkpoint chosen)",
             "train": "the final checkpoint of the recipe's training run (no checkpoint chosen)"}
"""What ``eval --selection`` records of the main job's models: the recipe was fixed on validation beforehand, and
each model is the one its recipe ends with, read once on the test suite."""
RECIPES: dict[str, Recipe] = {
    "reference": Recipe(warmstart=("warmstart-1", "warmstart-2", "warmstart-3"),
                        train={name: (config, ()) for name, config in TRAINED.items()},
                        ma_models=("warmstart",), minutes=REFERENCE_MINUTES),
    # a start with room: stage 1 with a third of its Sokoban 6x6 demonstrations
    # (docs/lab/2026-11-29-rl-from-a-weaker-start.md)
    "short-sft": Recipe(warmstart=("warmstart-1",), start="default model + short SFT", ma_models=(),
                        stage_overrides={"warmstart-1": ("episodes={AgentSokoban-v0: 60000, AgentFrozenLake-v0: 6000, "
                                                         "AgentFrozenLakeNoSlip-v0: 12000, AgentBandit-v0: 1000}",)},
                        train={**{name: (config, ()) for name, config in TRAINED.items()},
                               "gigpo": ("baseline-gigpo", (f"train_env_manager.tags={SHORT_SFT_ENVS}",
                                                            "train_env_manager.num_groups_partition=[3, 3, 1, 1]",
                                                            f"val_env_manager.tags={SHORT_SFT_ENVS}",
                                                            "val_batch_size=1024",
                                                            "val_env_manager.num_env_groups=1024",
                                                            # the KL loss its board entry was trained with
                                                            # (baseline-gigpo.yaml dropped it on 2026-12-01)
                                                            "use_kl_loss=true", "kl_loss_coef=0.01"))},
                        minutes={**REFERENCE_MINUTES, "warmstart": 11.2, "train starpo": 4.8, "train starpo-s": 4.2,
                                 "train gigpo": 4.9}),
    "smoke": Recipe(warmstart=("warmstart-smoke-1", "warmstart-smoke-2"),
                    # 5 groups split evenly over each recipe's tags (4 or 5 envs: every tag gets one or more)
                    train={name: (config, ("max_steps=2", "eval_steps=2", "save_steps=2", "rollout_batch_size=10",
                                           "train_env_manager.num_env_groups=5",
                                           "train_env_manager.num_groups_partition=null",
                                           "train_env_manager.group_size=2",
                                           "val_batch_size=10", "val_env_manager.num_env_groups=10",
                                           "ppo_mini_batch_size=10", "micro_batch_size=10"))
                           for name, config in TRAINED.items()},
                    ma_models=("warmstart",), ma_model_eval=("--max-new-tokens", "4"), compared=False,
                    # its evaluations and submissions play and re-generate the whole suite, as the reference's do
                    minutes={"init-model": 0.1, "warmstart stage 1": 0.5, "warmstart": 0.5, "train": 0.3,
                             **{k: v for k, v in REFERENCE_MINUTES.items() if k.startswith(("eval", "submit"))}}),
}


@dataclass
class Job:
    """One step: a command, the jobs it waits for, and the file whose existence means it is done (``None``: always
    run; done when it exits with 0)."""

    name: str
    argv: list[str]
    output: Path | None
    after: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None
    log: Any = None
    started: float = 0.0
    seconds: float = 0.0
    status: str = "waiting"
    threads: int = 1
    """The cores the step takes of ``max_parallel``: its torch threads (``OMP_NUM_THREADS``), or a warm start's
    processes."""
    minutes: float = 1.0
    """What the step is expected to take (:func:`expected_minutes`), for the time estimates."""
    resumes_from: Path | None = None
    """Where a stopped run of the step leaves its checkpoint (a warm start's checkpoint file, a trainer's run
    folder): if it exists when the step starts, the step continues from it, and the console says so."""

    on_board: tuple[Path, str, Path] | None = None
    """A submit step's ``(board, name, results file)``: finished once the board holds that very file under that
    name (:func:`on_board`), so a re-run of a finished main job re-verifies nothing."""

    def finished(self) -> bool:
        """Whether an earlier run finished the step: its output exists (a submit step: :attr:`on_board`)."""
        if self.on_board is not None:
            return on_board(*self.on_board)
        return self.output is not None and self.output.exists()

    def resuming(self) -> bool:
        """Whether the step will continue from a checkpoint of an earlier, stopped run."""
        marker = self.resumes_from
        return marker is not None and (marker.is_file() or bool(run_folder.checkpoints(marker)))


def on_board(board: Path, name: str, results: Path) -> bool:
    """Whether ``board`` holds ``results`` byte for byte as the submission ``name`` (its SHA-256 in the index)."""
    if not results.is_file():
        return False
    index = read_index(board) if board.is_dir() else None
    digest = hashlib.sha256(results.read_bytes()).hexdigest()
    return any(r["slug"] == slugify(name) and r["sha256"] == digest for r in (index or {}).get("submissions", []))


STEP_MAIN = ("import sys; sys.path[:] = [p for p in sys.path if p]; from agentgym_bench.cli import main; "
             "sys.exit(main())")
"""How a step runs the command line: as ``agentgym-bench`` does, without the current folder on ``sys.path`` (the
``''`` that ``python -m`` and ``-c`` put first, absent under ``PYTHONSAFEPATH``), so a folder of the user's own
``trainers/`` or ``agentgym_bench/`` is not imported."""


def cli(*args: str) -> list[str]:
    """The argv of a step that runs ``agentgym-bench ARGS`` in this Python (:data:`STEP_MAIN`)."""
    return [sys.executable, "-c", STEP_MAIN, *args]


def plan(recipe: Recipe, work: Path, board: Path, suite: str, ma_board: Path | None = None,
         ma_suite: str | None = None, max_parallel: int = 2, checkpoint: Path | None = None) -> list[Job]:
    """The jobs of the main job, in a valid order; with ``ma_suite``, also the two-player suite's onto ``ma_board``.

    With ``checkpoint`` (the published warm start, :func:`published_checkpoint`) the trainers start from it; without,
    from scratch: ``init-model`` and the recipe's warm-start stages make ``<work>/warmstart`` first. Either way the
    warm start is evaluated as "default model + SFT". Each warm-start stage takes the processes its config names, at
    most ``max_parallel`` (a warm start on fewer, ``--jobs 1``, is another model). The trainers come first in the
    list (the longest
    steps start first, :func:`run_jobs` starts ready steps in list order), the evaluations and submissions after;
    each results file is submitted as soon as it is written (submissions queue on the board's lock)."""
    results = work / "results"
    jobs: list[Job] = []
    if checkpoint is None:
        warm_jobs, warm = warm_start_jobs(recipe, work, max_parallel)
        jobs += warm_jobs
        made_by = ["warmstart"]
    else:
        warm, made_by = checkpoint, []
    # a published folder holds weights only: its training record is its committed board entry's, where that has one
    known = checkpoint is None or published_entry(checkpoint) is not None
    trained_by = ("--trained-by", str(warm), "--selection", SELECTION["warmstart"]) if known else ()
    for name, (config, overrides) in recipe.train.items():
        run = work / "runs" / name
        jobs.append(Job(f"train {name}", cli("train", config, f"pretrain={warm}", f"output_dir={run}",
                                             "resume_from_checkpoint=auto", *overrides),
                        run / run_folder.SUMMARY, after=made_by, resumes_from=run))
    for replayed in dict.fromkeys(FROZEN[name] for name in recipe.train):  # one frozen run per set of rooms
        config, overrides = recipe.train[replayed]
        run = work / "runs" / f"frozen-{replayed}"
        jobs.append(Job(f"train frozen-{replayed}", cli("train", config, f"pretrain={warm}", f"output_dir={run}",
                                                    "resume_from_checkpoint=auto", *overrides, "learning_rate=0"),
                        run / run_folder.SUMMARY, after=made_by, resumes_from=run))
    jobs += [Job(f"eval {name}", cli("eval", "--policy", name, "--suite", suite,
                                     "--out", str(results / f"{name}.json.gz")), results / f"{name}.json.gz")
             for name in ("oracle", "random")]
    jobs.append(Job("eval warmstart", cli("eval", "--policy", f"hf:{warm}", "--suite", suite, *recipe.model_eval,
                                          *trained_by, "--out", str(results / "warmstart.json.gz")),
                    results / "warmstart.json.gz", after=made_by))
    for name in recipe.train:
        run = work / "runs" / name
        jobs.append(Job(f"eval {name}", cli("eval", "--policy", f"hf:{run}", "--suite", suite,
                                            *recipe.model_eval, "--trained-by", str(run), "--selection",
                                            SELECTION["train"], "--out", str(results / f"{name}.json.gz")),
                        results / f"{name}.json.gz", after=[f"train {name}"]))
    for stem in ("oracle", "random", "warmstart", *recipe.train):
        name = recipe.board_name(stem)
        jobs.append(Job(f"submit {stem}", cli("submit", str(results / f"{stem}.json.gz"), "--name", name,
                                              "--board", str(board), "--suite", suite, "--replace"),
                        None, after=[f"eval {stem}"], on_board=(board, name, results / f"{stem}.json.gz")))
    if ma_suite is not None:
        assert ma_board is not None
        jobs += two_player_jobs(recipe, work, ma_board, ma_suite, warm, made_by, trained_by)
    for job in jobs:
        job.minutes = expected_minutes(recipe, job.name)
    return jobs


def two_player_jobs(recipe: Recipe, work: Path, ma_board: Path, ma_suite: str, warm: Path, made_by: list[str],
                    trained_by: tuple[str, ...]) -> list[Job]:
    """The two-player suite's evaluations (random, scripted and the recipe's ``ma_models``) and submissions."""
    ma = work / "results-ma"
    models = {"warmstart": (warm, made_by),
              **{name: (work / "runs" / name, [f"train {name}"]) for name in recipe.train}}
    models = {k: v for k, v in models.items() if recipe.ma_models is None or k in recipe.ma_models}
    jobs = [Job(f"eval-ma {name}", cli("eval", "--policy", name, "--suite", ma_suite,
                                       "--out", str(ma / f"{name}.json.gz")), ma / f"{name}.json.gz")
            for name in ("random", "scripted")]
    jobs += [Job(f"eval-ma {name}", cli("eval", "--policy", f"hf:{model}", "--suite", ma_suite, *recipe.ma_model_eval,
                                        *(trained_by if name == "warmstart" else ("--trained-by", str(model),
                                                                                   "--selection", SELECTION["train"])),
                                        "--out", str(ma / f"{name}.json.gz")),
                 ma / f"{name}.json.gz", after=after) for name, (model, after) in models.items()]
    jobs += [Job(f"submit-ma {stem}", cli("submit", str(ma / f"{stem}.json.gz"), "--name", recipe.board_name(stem),
                                          "--board", str(ma_board), "--suite", ma_suite, "--replace"),
                 None, after=[f"eval-ma {stem}"],
                 on_board=(ma_board, recipe.board_name(stem), ma / f"{stem}.json.gz"))
             for stem in ("random", "scripted", *models)]
    return jobs


def expected_minutes(recipe: Recipe, name: str) -> float:
    """The minutes ``recipe.minutes`` gives the step ``name`` (by its name, then its first word; 1 if neither)."""
    return recipe.minutes.get(name, recipe.minutes.get(name.split()[0], 1.0))


def warm_start_jobs(recipe: Recipe, work: Path, max_parallel: int) -> tuple[list[Job], Path]:
    """``init-model`` and the recipe's warm-start stages, each from the model of the one before, on the processes
    its config names (at most ``max_parallel``); the last one's folder, ``<work>/warmstart`` (the main job's models
    stay in its work folder, apart from a user's own)."""
    default, warm = work / "default-model", work / "warmstart"
    jobs = [Job("init-model", cli("init-model", "--path", str(default)), default / "config.json")]
    start, made_by = default, "init-model"
    for stage, config in enumerate(recipe.warmstart, 1):
        last = stage == len(recipe.warmstart)
        output = warm if last else work / f"warmstart-stage{stage}"
        name = "warmstart" if last else f"warmstart stage {stage}"
        processes = min(stage_processes(config), max_parallel)
        jobs.append(Job(name, cli("warmstart", config, f"model={start}", f"output={output}",
                                  f"processes={processes}", *recipe.stage_overrides.get(config, ())),
                        output / "warmstart.json",
                        after=[made_by], threads=processes, resumes_from=output))
        start, made_by = output, name
    return jobs, warm


def stage_processes(config: str) -> int:
    """The processes the bundled warm-start config ``config`` names (``trainers/configs/<config>.yaml``).

    Raises:
        UserError: no such config, or one that does not name its processes (a recipe's stage must: the count is part
            of the model it makes).
    """
    path = TRAINER_CONFIGS / f"{config}.yaml"
    settings = yaml.safe_load(path.read_text()) if path.is_file() else None
    if not isinstance(settings, dict) or not isinstance(settings.get("processes"), int):
        raise UserError(f"{path}: a recipe's warm-start stage must be a bundled config that names its processes")
    return settings["processes"]


def published_checkpoint(committed_root: Path, suite: str, name: str = "default model + SFT") -> Path | None:
    """The published warm start the main job trains from: the committed board's entry ``name``'s weights (the
    reference recipe's "default model + SFT": ``<committed_root>/<suite>/models/default-model-sft``), checked against
    the SHA-256 its results file records; ``None`` if the board has no such entry with its weights (then the main job
    makes its own, from scratch).

    Raises:
        UserError: weights that are not the ones the board scored (the message says how to start from scratch).
    """
    board = committed_root / suite
    folder = published_path(board, name)
    instead = "or run the whole recipe with --from-scratch"
    index = read_index(board) if board.is_dir() else None
    record = next((r for r in (index or {}).get("submissions", []) if r["name"] == name), None)
    if record is None or not folder.is_dir():
        return None
    found = model_sha256(folder)
    if found != record["model_sha256"]:
        raise UserError(f"the weights in {folder} (sha256 {found}) are not the ones {board} scored as {name!r} "
                        f"(sha256 {record['model_sha256']}); restore them (git checkout), {instead}")
    return folder


def run_jobs(jobs: list[Job], work: Path, max_parallel: int, status_every: float = 30.0) -> None:
    """Run the jobs on at most ``max_parallel`` threads at once (``Job.threads`` each), each logging to
    ``<work>/logs/<name>.log``; print a status line every ``status_every`` seconds and a line when a job ends. Jobs
    start in list order: one that is ready but does not fit yet holds back the ready jobs after it (so a
    many-thread step is not starved by one-thread steps). A failed job stops the run (with its log's tail)."""
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    by_name = {j.name: j for j in jobs}
    for job in jobs:
        if job.finished():
            job.status = "done"
            done = (f"{job.on_board[2]} is on {job.on_board[0]} as {job.on_board[1]!r}" if job.on_board
                    else f"{job.output}; delete it to redo")
            print(f"[baselines] {job.name}: already done ({done})", flush=True)
    last_status = start = time.monotonic()
    slowdown = load_slowdown(max_parallel)
    busy = (f", {slowdown:.1f}x for the load this machine already carries (load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)" if slowdown > 1.05 else "")
    shown = (minutes_left(jobs, max_parallel, start, slowdown=slowdown), 0.0)
    print(f"[baselines] expected: about {shown[0]:.0f} min on {max_parallel} cores as fast as the reference "
          f"machine's (docs/results.md, 'Wall time'){busy}; the status line corrects the estimate as steps finish",
          flush=True)
    while any(j.status in ("waiting", "running") for j in jobs):
        for job in jobs:
            if job.status == "running" and job.process is not None and job.process.poll() is not None:
                job.seconds = time.monotonic() - job.started
                job.log.close()
                if job.process.returncode != 0 or (job.output is not None and not job.output.exists()):
                    tail = (logs / f"{_slug(job.name)}.log").read_text(errors="replace").splitlines()[-15:]
                    for other in jobs:
                        if other.status == "running" and other.process is not None:
                            other.process.terminate()
                    raise UserError(f"step '{job.name}' failed (exit {job.process.returncode}); last lines of "
                                    f"{logs / _slug(job.name)}.log:\n  " + "\n  ".join(tail))
                job.status = "done"
                print(f"[baselines] {job.name}: done in {job.seconds / 60:.1f} min", flush=True)
        busy = sum(j.threads for j in jobs if j.status == "running")
        for job in jobs:
            if job.status == "waiting" and all(by_name[a].status == "done" for a in job.after):
                if busy + job.threads > max_parallel and busy > 0:
                    break
                threads = str(job.threads)
                resuming = job.resuming()
                job.log = open(logs / f"{_slug(job.name)}.log", "a")  # noqa: SIM115 - closed when the job ends
                job.log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')}: {job.name} "
                              f"{'resumed from its checkpoint' if resuming else 'started'}\n")
                job.log.flush()
                job.process = subprocess.Popen(job.argv, stdout=job.log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, preexec_fn=end_with_parent,
                                               env={**env, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
                job.started, job.status = time.monotonic(), "running"
                busy += job.threads
                how = "resumed from its last checkpoint" if resuming else "started"
                print(f"[baselines] {job.name}: {how} (log: {logs / _slug(job.name)}.log)", flush=True)
        if time.monotonic() - last_status >= status_every:
            last_status = now = time.monotonic()
            lines = {j.name: _last_line(logs, j) for j in jobs if j.status == "running"}
            parts = [f"{name} {(now - by_name[name].started) / 60:.1f} min: {line}" for name, line in lines.items()]
            # a step's own estimate counts once it has run a minute (its first iterations say little)
            reported = {name: seconds / 60 for name, line in lines.items()
                        if now - by_name[name].started >= 60 and (seconds := seconds_left(line))}
            elapsed, left = (now - start) / 60, minutes_left(jobs, max_parallel, now, reported, slowdown)
            done = sum(j.status == "done" for j in jobs)
            text, showing = time_left(left, elapsed, shown)
            shown = (showing, elapsed)
            print(f"[baselines] {elapsed:.1f} min, {text}, {done}/{len(jobs)} steps done; running: "
                  + "; ".join(parts), flush=True)
        time.sleep(1.0)


def plan_text(jobs: list[Job], max_parallel: int) -> str:
    """What ``baselines --dry-run`` prints: each step in the order it would start, whether an earlier run finished it
    (``done``) or left a checkpoint it goes on from (``resumes``), its expected minutes, the steps it waits for and
    its command; last, the expected wall time of the steps left (:func:`minutes_left`). Marks finished jobs done."""
    lines = []
    for job in jobs:
        job.status = "done" if job.finished() else job.status
        state = job.status if job.status == "done" else "resumes" if job.resuming() else "to run"
        after = f", after {', '.join(job.after)}" if job.after else ""
        lines += [f"  {job.name}: {state}, ~{job.minutes:g} min{after}",
                  f"      {shlex.join(['agentgym-bench', *job.argv[3:]])}"]
    left = minutes_left(jobs, max_parallel, time.monotonic())
    done = sum(job.status == "done" for job in jobs)
    lines.append(f"{len(jobs)} steps, {done} done: about {left:.0f} min left on {max_parallel} cores as fast as the "
                 "reference machine's (docs/results.md, 'Wall time')")
    return "\n".join(lines)


def minutes_left(jobs: list[Job], max_parallel: int, now: float, reported: dict[str, float] | None = None,
                 slowdown: float = 1.0) -> float:
    """Wall minutes until every job is done: :func:`run_jobs`'s schedule simulated, each step still waiting taking
    its ``minutes`` and each running one what is left of them (at least what its progress line says it has left,
    ``reported``: step name -> minutes), both scaled by the machine's speed: how much longer the steps finished in
    this run took than expected (between 0.25x and 4x), or, until a minute of them has finished, ``slowdown``
    (:func:`load_slowdown`: what other work on the machine takes)."""
    reported = reported or {}
    finished = [j for j in jobs if j.status == "done" and j.seconds > 0]
    expected = sum(j.minutes for j in finished)
    speed = min(max(sum(j.seconds for j in finished) / 60 / expected, 0.25), 4.0) if expected >= 1 else slowdown
    finish = {j.name: max(j.minutes * speed - (now - j.started) / 60, reported.get(j.name, 0.0), 0.0)
              for j in jobs if j.status == "running"}
    done = {j.name for j in jobs if j.status == "done"}
    waiting = [j for j in jobs if j.status == "waiting"]
    threads = {j.name: j.threads for j in jobs}
    clock = 0.0
    while waiting or finish:
        busy = sum(threads[name] for name in finish)
        for job in [j for j in waiting if all(a in done for a in j.after)]:
            if busy + job.threads > max_parallel and busy > 0:
                break
            finish[job.name], busy = clock + job.minutes * speed, busy + job.threads
            waiting.remove(job)
        if not finish:  # what waits needs a step that is not in the list
            break
        name = min(finish, key=finish.__getitem__)
        clock = finish.pop(name)
        done.add(name)
    return clock


def load_slowdown(max_parallel: int) -> float:
    """How much longer the steps will take than on an idle machine, from the load it carries before the job starts:
    ``(load + max_parallel) / cores``, at least 1 (2 cores already busy with 2 other threads: 2x)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1.0, (load + max_parallel) / (os.cpu_count() or 1))


def time_left(left: float, elapsed: float, shown: tuple[float, float]) -> tuple[str, float]:
    """The status line's estimate, ``about N min left (P%)``, and the minutes it shows, where the last line showed
    ``shown`` (its minutes left, and the elapsed minutes then). A line never shows more time left than the last one
    minus the time since, unless the estimate has grown past that by more than a minute, and then it says so
    ("revised up"), so a reader can tell news from noise."""
    bound = max(shown[0] - (elapsed - shown[1]), 0.0)
    revised = left > bound + 1.0
    left = left if revised else min(left, bound)
    text = (f"about {left:.0f} min left ({elapsed / (elapsed + left):.0%})" if left > 0 else
            "a little longer: the last steps are running")
    return text + (", revised up" if revised else ""), left


def seconds_left(progress_line: str) -> float | None:
    """The ``~Ns left`` of a progress line (:mod:`agentgym_bench.progress`), if it has one."""
    found = re.search(r"~(\d+)s left", progress_line)
    return float(found.group(1)) if found else None




def _slug(name: str) -> str:
    return name.replace(" ", "-")


def _last_line(logs: Path, job: Job) -> str:
    try:
        text = (logs / f"{_slug(job.name)}.log").read_bytes()[-2000:].decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    if not lines or len(lines[-1]) <= 100:
        return lines[-1] if lines else ""
    return lines[-1][:100].rsplit(" ", 1)[0] + " ..."  # cut between words



def training_report(work: Path, names: list[str]) -> str:
    """What each RL run did (``<work>/runs/<name>``): its validation curve
    (:func:`agentgym_bench.run_folder.learning_line`) and its training success against its frozen run's on the same
    rooms (:data:`FROZEN`, :func:`agentgym_bench.run_folder.against_frozen_line`)."""
    runs = work / "runs"
    lines = ["RL runs, validation success at each evaluation (the trainer's own validation episodes; the first point "
             "is the start model):"]
    lines += [f"  {name}: {run_folder.learning_line(runs / name)}" for name in names]
    lines += ["RL runs on their own training rooms: training success minus the start model's on the same rooms (a "
              "frozen run), mean over the second half of the iterations [95% over the iterations of this one run, "
              "not over training seeds: another seed is another draw]; what a run learned where it trained (the "
              "suite reads held-out rooms):"]
    lines += [f"  {name}: {run_folder.against_frozen_line(runs / name, runs / f'frozen-{FROZEN[name]}')}"
              for name in names if name in FROZEN]
    return "\n".join(lines)
