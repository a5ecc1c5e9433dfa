"""What a results file records of how its model was trained: the trainer's config, compute and curves."""

import json

import pytest

from agentgym_bench.benchmark import provenance
from agentgym_bench.benchmark import results as R
from agentgym_bench.benchmark.evaluate import evaluate_suite
from agentgym_bench.errors import UserError
from agentgym_bench.rollout.specs import policy_from_spec
from tests.benchmark.conftest import suite_of


def write_run(folder, rows, extra_lines=()):
    folder.mkdir()
    (folder / "config.yaml").write_text("preset: gigpo\nmax_steps: 3\nrollout_batch_size: 8\n")
    lines = [json.dumps(r) for r in rows] + list(extra_lines)
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_curves_keep_the_shown_metrics_and_skip_what_does_not_parse(tmp_path):
    rows = [{"step": 0, "val/success": 0.5, "val/AgentSokoban-v0/success": 0.25, "val/turns": 3.0},
            {"step": 1, "reward/success": 0.4, "loss/entropy": 1.5, "loss/policy": 0.1, "rollout/format_valid": 1.0},
            {"step": 2, "reward/success": None, "loss/entropy": True, "reward/in_group_std": 0.3},
            {"step": 3, "reward/success": 0.6, "val/success": 0.75}]
    run = write_run(tmp_path / "run", rows, ['{"step": 4, "reward/succ'])  # a run killed mid-write
    trainer, compute = provenance.training_record(run)
    assert trainer["algorithm"] == "gigpo" and compute == {"steps": 3, "episodes": 24, "wall_time_s": None}
    assert trainer["curves"] == {
        "loss/entropy": [[1, 1.5]], "reward/in_group_std": [[2, 0.3]], "reward/success": [[1, 0.4], [3, 0.6]],
        "rollout/format_valid": [[1, 1.0]], "val/AgentSokoban-v0/success": [[0, 0.25]],
        "val/success": [[0, 0.5], [3, 0.75]]}


def test_a_long_run_is_thinned_evenly_keeping_both_ends(tmp_path):
    rows = [{"step": i, "reward/success": i / 2000} for i in range(2000)]
    curve = provenance.training_curves(write_run(tmp_path / "run", rows) / "metrics.jsonl")["reward/success"]
    assert len(curve) == provenance.MAX_POINTS and curve[0] == [0, 0.0] and curve[-1] == [1999, 1999 / 2000]
    steps = [s for s, _ in curve]
    assert steps == sorted(set(steps)) and max(b - a for a, b in zip(steps, steps[1:], strict=False)) <= 5


def test_results_with_curves_round_trip_and_bad_curves_are_refused(tmp_path):
    rows = [{"step": i, "reward/success": 0.1 * i, "val/success": 0.2} for i in range(4)]
    trainer, compute = provenance.training_record(write_run(tmp_path / "run", rows))
    policy, record = policy_from_spec("random")
    results = evaluate_suite(policy, suite_of(None, 2), record, trainer=trainer, training_compute=compute)
    back = R.loads(R.dumps(results))
    assert back.metadata["trainer"]["curves"]["reward/success"][3] == [3, pytest.approx(0.3)]
    good = results.to_dict()
    for curve, field in [([[0, "high"]], r"curves\.val/success\[0\]\[1\]"),
                         ([[0, 0.1, 2]], r"curves\.val/success\[0\]"), ([[-1, 0.1]], r"curves\.val/success\[0\]\[0\]"),
                         ([[i, 0.1] for i in range(501)], r"curves\.val/success")]:
        bad = json.loads(json.dumps(good))
        bad["metadata"]["trainer"]["curves"]["val/success"] = curve
        with pytest.raises(R.ResultsError, match=field):
            R.loads(json.dumps(bad).encode())


def test_a_folder_that_is_no_run_is_named(tmp_path):
    with pytest.raises(UserError, match="neither a trainer run folder"):
        provenance.training_record(tmp_path)


def test_a_record_names_no_folder_of_the_machine_that_trained(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(f"preset: starpo\nmax_steps: 2\npretrain: {tmp_path}/models/warm\n"
                                     "output_dir: ~/runs/starpo\ntrain_env_manager: {tags: [AgentBandit-v0]}\n")
    trainer, _ = provenance.training_record(run)
    assert trainer["config"]["pretrain"] == "<local>/warm" and trainer["config"]["output_dir"] == "<local>/starpo"
    assert trainer["config"]["train_env_manager"] == {"tags": ["AgentBandit-v0"]}
    assert str(tmp_path) not in json.dumps(trainer)


def test_the_git_commit_is_the_packages_own_checkouts_never_a_repository_it_sits_in(tmp_path):
    """A wheel installed into a venv inside the user's own repository must not record that repository's commit."""
    import subprocess

    from agentgym_bench.benchmark.evaluate import git_commit

    def git(*args, cwd):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                            "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    project = tmp_path / "project"  # the user's repository, with a venv inside
    site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "agentgym_bench").mkdir(parents=True)
    (site / "agentgym_bench" / "__init__.py").write_text("")
    git("init", "-q", ".", cwd=project)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=project)
    assert git_commit(site) is None
    (project / "agentgym_bench").mkdir()  # a checkout of the package itself
    (project / "agentgym_bench" / "__init__.py").write_text("")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout.strip()
    assert git_commit(project) == head  # the new files are untracked: not dirty
