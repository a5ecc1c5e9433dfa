from pathlib import Path

import pytest

from agentgym_bench import run_folder
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.main_job import Job
from agentgym_bench.rollout.specs import model_path


def fake_run(root: Path) -> Path:
    """checkpoint-2 and checkpoint-10 complete; checkpoint-11.tmp still being written, with all its files."""
    run = root / "run"
    (run / "checkpoint-2" / "actor").mkdir(parents=True)
    (run / "config.yaml").write_text("preset: starpo\n")
    for name in ("checkpoint-2", "checkpoint-10", "checkpoint-11.tmp"):
        (run / name / "actor").mkdir(parents=True, exist_ok=True)
        (run / name / "trainer_state.pt").write_bytes(b"")
        (run / name / "actor" / "config.json").write_text("{}")
    (run / "checkpoint-12.json").write_text("{}")  # not a checkpoint folder
    return run


def test_one_rule_finds_the_complete_checkpoints_for_resuming_evaluating_and_the_main_job(tmp_path):
    run = fake_run(tmp_path)
    assert [p.name for p in run_folder.checkpoints(run)] == ["checkpoint-2", "checkpoint-10"]
    assert run_folder.final_actor(run) == run / "checkpoint-10" / "actor"
    assert model_path(str(run)) == str(run / "checkpoint-10" / "actor")
    assert Job("train", [], run / "summary.json", resumes_from=run).resuming()
    assert run_folder.checkpoints(tmp_path / "missing") == []


def test_a_run_without_a_complete_checkpoint_is_one_line(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    (run / "config.yaml").write_text("{}")
    assert run_folder.is_run_folder(run) and run_folder.read_config(run) == {} and run_folder.read_summary(run) is None
    with pytest.raises(UserError, match="no complete checkpoint"):
        model_path(str(run))
    assert not Job("train", [], run / "summary.json", resumes_from=run).resuming()


def test_progress_line_measures_the_current_process_and_names_the_last_checkpoint(tmp_path):
    """A run resumed at iteration 10: its clock starts again, so the rate is the second process's (2 iterations a
    second there, 1 before); torn and non-record lines are skipped; the last complete checkpoint is named."""
    import json

    run = fake_run(tmp_path)
    (run / "config.yaml").write_text("preset: starpo\nmax_steps: 130\n")
    assert run_folder.progress_line(run) is None  # no iteration logged yet
    first = [{"step": s, "time/total": float(s)} for s in range(0, 11)]  # 1 it/s
    second = [{"step": 10 + k, "time/total": 3.0 + k / 2} for k in range(1, 11)]  # resumed, a new clock: 2 it/s
    lines = [json.dumps(r) for r in first + second[:5]] + ["[1, 2]"] + [json.dumps(r) for r in second[5:]]
    (run / "metrics.jsonl").write_text("\n".join(lines + ['{"step": 21, "time/to']))
    assert run_folder.progress_line(run) == "iteration 20/130, 120.0 it/min, ~1 min left, checkpoint-10"
    (run / "summary.json").write_text("{}")
    assert run_folder.progress_line(run) == "finished"
