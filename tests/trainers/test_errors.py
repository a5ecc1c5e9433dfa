"""The first hour's mistakes are refused before any model loads, with one line that says what to do."""

import subprocess
import sys
from pathlib import Path

import pytest

from agentgym_bench.errors import UserError
from agentgym_bench.paths import resolve_model
from tests.trainers.conftest import tiny_config_dict
from trainers.rl.config import ConfigError, config_from_dict, load_config
from trainers.rl.train import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "message"), [
    ("learning_rate: [1e-4\n", r"bad\.yaml is not valid YAML at line 2, column 1"),
    ("", r"bad\.yaml is empty; start from a bundled config"),
    ("# only a comment\n", r"bad\.yaml is empty"),
    ("- a\n- b\n", r"bad\.yaml must hold a mapping of config keys, not list"),
])
def test_unreadable_files_name_the_file(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_config_errors_are_user_errors():
    assert issubclass(ConfigError, UserError) and issubclass(ConfigError, ValueError)


def test_impossible_env_kwargs_are_refused_before_the_models_load(tmp_path):
    empty_folder = tmp_path  # holds no model: loading one would fail differently
    config = config_from_dict(tiny_config_dict(empty_folder, tmp_path, "starpo",
                                               train_env_manager={"env_kwargs": {"prompt": "compact", "colour": 1}}))
    with pytest.raises(ConfigError, match=r"train_env_manager\.env_kwargs=.*colour.* cannot build "
                                          r"AgentFrozenLake-v0: unknown argument"):
        main(config)


def test_a_missing_model_folder_is_refused(tmp_path):
    config = config_from_dict(tiny_config_dict(tmp_path / "nonexistent", tmp_path / "out", "starpo"))
    with pytest.raises(UserError, match="no model folder at .*nonexistent"):
        main(config)
    assert not (tmp_path / "out").exists()


def test_resolve_model(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path))
    (tmp_path / "models" / "warmstart").mkdir(parents=True)
    assert resolve_model("warmstart") == str(tmp_path / "models" / "warmstart")
    assert resolve_model("$AGENTGYM_BENCH_HOME/models/warmstart") == str(tmp_path / "models" / "warmstart")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id not cached, offline: refused at once
    with pytest.raises(UserError, match="not in the local hub cache"):
        resolve_model("Qwen/Qwen2.5-0.5B-Instruct")
    for missing in ("/nonexistent", "~/nowhere", "./here"):
        with pytest.raises(UserError, match="no model folder at"):
            resolve_model(missing)


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}/bad.yaml"], "bad.yaml is not valid YAML"),
    (["starpo-frozenlake", "pretrain=/nonexistent"], "no model folder at /nonexistent"),
    (["starpo-frozenlake", "train_env_manager.tags=[FrozenLak]"], "'FrozenLak' is not a registered env id"),
])
def test_the_command_prints_one_line_and_exits_2(tmp_path, args, message):
    (tmp_path / "bad.yaml").write_text("max_steps: 3\n  learning_rate: 1\n")
    done = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "train",
                           *[a.format(tmp=tmp_path) for a in args]], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("notice:")]
    assert len(lines) == 1 and message in lines[0], done.stderr
