"""A trainer run's record carries what the model it started from was trained on (``config.started_from``), so a
board's "Trained on" is the union of the run's envs and its start's; boards whose results files predate it take the
start's record from the board entry of the published model the run names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agentgym_bench.benchmark.provenance import start_config, training_record, with_start
from agentgym_bench.benchmark.results import read_results
from agentgym_bench.benchmark.suites import load_suite
from agentgym_bench.cli import main
from agentgym_bench.errors import UserError
from agentgym_bench.leaderboard.render import trained_on, training_summary

ROOT = Path(__file__).resolve().parents[2]
BOARD = ROOT / "leaderboards" / "agentgym-v2"
PUBLISHED = "leaderboards/agentgym-v2/models/default-model-sft"
RL_ENVS = ["AgentSokoban-v0", "AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0", "AgentBandit-v0"]


def run_folder(folder: Path, pretrain: str) -> Path:
    """A trainer run folder's record as the reference trainer writes it (``config.yaml``): GiGPO on the RL envs."""
    folder.mkdir(parents=True)
    config = {"preset": "gigpo", "pretrain": pretrain, "max_steps": 2, "rollout_batch_size": 4,
              "train_env_manager": {"tags": RL_ENVS}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def test_a_run_from_the_published_checkpoint_carries_the_warm_starts_envs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the run names the published folder relative to the repository, as the main job does
    run = run_folder(tmp_path / "run", PUBLISHED)
    trainer = with_start(training_record(run)[0], run)
    board = json.loads((BOARD / "board.json").read_text())
    published = next(r for r in board["submissions"] if r["model"] == PUBLISHED)
    assert trainer["config"]["started_from"] == published["trainer_config"]
    assert trainer["config"]["pretrain"] == PUBLISHED
    assert trained_on(trainer["config"]) == [*RL_ENVS, "AgentSokobanLarge-v0"]


def test_eval_trained_by_a_run_from_a_warm_start_records_both(tmp_path, model_dir, monkeypatch):
    from trainers.sft.sft_config import SFTConfig
    from trainers.sft.warmstart import warm_start

    warm = tmp_path / "warm"  # a real (tiny) warm start: its warmstart.json is the start's record
    warm_start(SFTConfig(model=str(model_dir), output=str(warm), envs=("AgentSokobanLarge-v0",), episodes=4,
                               epochs=1, batch_size=8, eval_episodes=2))
    run = run_folder(tmp_path / "run", str(warm))  # an absolute path of this machine, hidden in the record
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--policy", "random", "--entries", "bandit", "--episodes", "1", "--trained-by", str(run),
                 "--out", "r.json.gz"]) == 0
    config = read_results(tmp_path / "r.json.gz").metadata["trainer"]["config"]
    assert config["pretrain"] == "<local>/warm"
    assert config["started_from"]["envs"] == ["AgentSokobanLarge-v0"]
    assert config["started_from"]["model"] == "<local>/default" and config["started_from"]["output"] == "<local>/warm"
    assert trained_on(config) == [*RL_ENVS, "AgentSokobanLarge-v0"]
    again = start_config(str(run))  # a run started from this run: the whole chain
    assert again["preset"] == "gigpo" and trained_on(again) == [*RL_ENVS, "AgentSokobanLarge-v0"]


def test_a_start_without_a_record_leaves_the_record_as_it_was(tmp_path, model_dir):
    run = run_folder(tmp_path / "run", str(model_dir))  # an untrained model folder: nothing says how it was made
    trainer = training_record(run)[0]
    assert with_start(trainer, run) == trainer
    run = run_folder(tmp_path / "hub", "Qwen/Qwen2.5-0.5B-Instruct")
    assert with_start(training_record(run)[0], run) == training_record(run)[0]


def test_the_committed_board_shows_the_warm_starts_envs_for_the_rl_entries():
    """Every RL entry's results file records its start's training (``eval --trained-by``: ``started_from``), so
    "Trained on" includes what the start learned: sokoban-8x8-2box for the RL entries from the published checkpoint,
    not for the three from the weaker start (the short SFT, which never saw it). A record without ``started_from``
    (a file evaluated before it was recorded, as the StarPO entries of 2026-11-27 were) takes it from its start's
    entry on the board, and reads the same."""
    board = json.loads((BOARD / "board.json").read_text())
    records, suite = board["submissions"], load_suite("agentgym-v2")
    rl_entries = [r for r in records if r["trainer"] in ("gigpo", "starpo", "starpo_s")]
    rl = {r["trainer"]: r for r in rl_entries if r["trainer_config"]["pretrain"] == PUBLISHED}
    assert len(rl) == 3
    short = [r for r in rl_entries if r["trainer_config"]["pretrain"] != PUBLISHED]
    assert sorted(r["name"] for r in short) == [f"default model + short SFT + {a}" for a in ("GiGPO", "StarPO",
                                                                                              "StarPO-S")]
    for r in short:
        assert r["trainer_config"]["started_from"]["envs"] == RL_ENVS  # the short SFT's four envs
        assert training_summary(suite, r, records)["text"] == "all but bandit-heldout-arms, sokoban-8x8-2box, webshop"
    for r in rl.values():
        assert "started_from" in r["trainer_config"]
        bare = {**r, "trainer_config": {k: v for k, v in r["trainer_config"].items() if k != "started_from"}}
        assert training_summary(suite, bare, records) == training_summary(suite, r, records)
    for name in ("starpo", "starpo_s"):  # their own mix leaves sokoban-8x8-2box out: the start is what adds it
        bare = {**rl[name], "trainer_config": {k: v for k, v in rl[name]["trainer_config"].items()
                                               if k != "started_from"}}
        assert training_summary(suite, bare)["text"] == "all but bandit-heldout-arms, sokoban-8x8-2box, webshop"
    for r in rl.values():
        summary = training_summary(suite, r, records)
        assert summary["text"] == "all but bandit-heldout-arms, webshop"
        assert "AgentSokobanLarge-v0" in summary["envs"] and "sokoban-8x8-2box" in summary["entries"]
    assert "| default model + SFT + GiGPO | hf (gigpo) | reproduced | all but bandit-heldout-arms, webshop |" in (
        BOARD / "README.md").read_text()


def test_a_published_model_folder_has_its_board_entrys_training_record(tmp_path):
    """``eval --trained-by`` of a board's published model (weights only): the record of the board entry that names
    it, so the main job's checkpoint entry says what it was trained on; a folder no entry names is refused."""
    entry = next(r for r in json.loads((BOARD / "board.json").read_text())["submissions"] if r["model"] == PUBLISHED)
    trainer, training = training_record(ROOT / PUBLISHED)
    assert trainer["algorithm"] == entry["trainer"] == "sft-warmstart"
    assert trainer["config"] == entry["trainer_config"] and training == entry["compute"]["training"]
    assert "AgentSokoban-v0" in trained_on(trainer["config"])
    copy = tmp_path / "leaderboards" / "agentgym-v2" / "models" / "other"
    copy.mkdir(parents=True)
    with pytest.raises(UserError, match="neither a trainer run folder"):
        training_record(copy)
