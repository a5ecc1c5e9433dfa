import json
from pathlib import Path

import pytest
import yaml

from agentgym_bench import run_folder
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.main_job import Job
from agentgym_bench.paths import resolve_model


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
    assert resolve_model(str(run)) == str(run / "checkpoint-10" / "actor")
    assert Job("train", [], run / "summary.json", resumes_from=run).resuming()
    assert run_folder.checkpoints(tmp_path / "missing") == []


def test_every_command_that_loads_a_model_takes_a_run_or_a_checkpoint_and_says_what_is_near_a_wrong_path(
        tmp_path, monkeypatch):
    """resolve_model is what eval, serve, publish-model and HFPolicy.from_pretrained load through."""
    run = fake_run(tmp_path)
    assert resolve_model(str(run / "checkpoint-2")) == str(run / "checkpoint-2" / "actor")
    with pytest.raises(UserError, match=r"is a trainer run: give the run, which loads its last checkpoint"):
        resolve_model(str(run / "actor"))  # a run has no actor/ of its own
    with pytest.raises(UserError, match=r"is a trainer's checkpoint: its model is .*checkpoint-10/actor"):
        resolve_model(str(run / "checkpoint-10" / "actr"))
    with pytest.raises(UserError, match=r"did you mean .*/run\?"):
        resolve_model(str(tmp_path / "rn"))
    monkeypatch.chdir(tmp_path)  # ORG/NAME is a hub id unless ORG is a folder here: then a path, never a download
    with pytest.raises(UserError, match=r"no model folder at run/checkpoint-1 \(run is a trainer run"):
        resolve_model("run/checkpoint-1")


def test_a_run_without_a_complete_checkpoint_is_one_line(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    (run / "config.yaml").write_text("{}")
    assert run_folder.is_run_folder(run) and run_folder.read_config(run) == {} and run_folder.read_summary(run) is None
    with pytest.raises(UserError, match="no complete checkpoint"):
        resolve_model(str(run))
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


def finished_run(folder: Path, success: list[float], lake: list[float], **config) -> Path:
    """A finished run folder: its config, one training record per iteration (all envs and one env), a summary."""
    folder.mkdir(parents=True)
    base = {"pretrain": "start", "seed": 0, "max_steps": len(success), "train_seed_start": 10000,
            "rollout_batch_size": 8, "train_env_manager": {"tags": ["AgentFrozenLake-v0"]}, "learning_rate": 1e-4}
    (folder / "config.yaml").write_text(yaml.safe_dump({**base, **config}))
    records = [{"step": 0, "val/success": 0.5}] + [
        {"step": i + 1, "reward/success": s, "reward/AgentFrozenLake-v0/success": f}
        for i, (s, f) in enumerate(zip(success, lake, strict=True))]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "summary.json").write_text("{}")
    return folder


def test_a_run_against_its_frozen_run_is_paired_by_iteration_over_its_second_half(tmp_path):
    run = finished_run(tmp_path / "run", [0.5, 0.6, 0.7, 0.8], [0.0, 0.0, 0.5, 0.5])
    frozen = finished_run(tmp_path / "frozen", [0.5, 0.5, 0.5, 0.5], [0.0, 0.5, 0.5, 0.25], learning_rate=0)
    # iterations 3-4: all envs +0.2, +0.3 (mean +0.25, interval +- 1.96 * 0.0707 / sqrt 2); the lake 0, +0.25
    assert run_folder.against_frozen_line(run, frozen) == (
        "iterations 3-4: all envs +0.250 [+0.152, +0.348], AgentFrozenLake-v0 +0.125 [-0.120, +0.370]")


@pytest.mark.parametrize(("change", "said"), [
    ({"learning_rate": 1e-12}, "is not a frozen run (learning_rate 1e-12, not 0)"),
    ({"learning_rate": 0, "train_seed_start": 20000}, "not paired with"),
    ({"learning_rate": 0, "pretrain": "another"}, "(pretrain differ)"),
    ({"learning_rate": 0, "train_env_manager": {"tags": ["AgentSokoban-v0"]}}, "(train_env_manager differ)"),
])
def test_a_frozen_run_on_other_rooms_or_that_learned_is_not_paired(tmp_path, change, said):
    run = finished_run(tmp_path / "run", [0.5, 0.6], [0.0, 0.0])
    frozen = finished_run(tmp_path / "frozen", [0.5, 0.5], [0.0, 0.0], **change)
    assert said in run_folder.against_frozen_line(run, frozen)
    sampled = finished_run(tmp_path / "sampled", [0.5, 0.6], [0.0, 0.0], dynamic_sampling={"enabled": True})
    frozen_ds = finished_run(tmp_path / "frozen-ds", [0.5, 0.5], [0.0, 0.0], learning_rate=0,
                             dynamic_sampling={"enabled": True})
    assert "with dynamic_sampling a run's refill rounds follow its own groups" in run_folder.against_frozen_line(
        sampled, frozen_ds)
