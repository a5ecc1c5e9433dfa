"""The warm start's config (``trainers/sft/sft_config.py``), its bundled stages and its command line: read by the
loader RL's config is read by, with the old flags of ``agentgym-bench warmstart`` kept for one release."""

import argparse

import pytest

from agentgym_bench.errors import UserError
from trainers.cli import configure_warmstart_parser, new_form, warmstart_config
from trainers.runtime.config_loading import CONFIG_DIR, ConfigError, bundled_configs, resolve_config
from trainers.sft.sft_config import DEFAULT_EPISODES, SFTConfig, load_sft_config, sft_config_from_dict

OLD_RECIPES = {
    "warmstart-1": (),
    "warmstart-2": ("--episodes", "AgentSokoban-v0=12000", "AgentFrozenLake-v0=6000", "AgentFrozenLakeNoSlip-v0=12000",
                    "AgentBandit-v0=1000", "--epochs", "16", "--lr", "1e-3"),
    "warmstart-3": ("--envs", "AgentSokoban-v0", "AgentSokobanLarge-v0", "AgentFrozenLake-v0",
                    "AgentFrozenLakeNoSlip-v0", "AgentBandit-v0", "--episodes", "AgentSokobanLarge-v0=40000",
                    "AgentSokoban-v0=36000", "AgentFrozenLake-v0=12000", "AgentFrozenLakeNoSlip-v0=24000",
                    "AgentBandit-v0=1000", "--epochs", "2", "--lr", "1e-3"),
    "warmstart-smoke-1": ("--episodes", "40", "--epochs", "1", "--eval-episodes", "8"),
    "warmstart-smoke-2": ("--episodes", "20", "--epochs", "1", "--eval-episodes", "8"),
}
"""Each stage as ``agentgym_bench/commands/baselines.py`` held it before it read these files: the extra arguments of
``agentgym-bench warmstart`` (``SECOND_STAGE``, ``THIRD_STAGE`` and the smoke recipe's tuples)."""


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_warmstart_parser(parser)
    return parser.parse_intermixed_args(argv)


@pytest.mark.parametrize("name", sorted(OLD_RECIPES))
def test_each_bundled_stage_is_the_stage_the_main_job_ran_with_flags(name):
    from_file = warmstart_config(parsed(name, "model=M", "output=O"))[0]
    from_flags, legacy = warmstart_config(parsed("--model", "M", "--output", "O", "--processes", "2", "--threads",
                                                 "1", *OLD_RECIPES[name]))
    assert from_file == from_flags and legacy["num_threads"] == 1


def test_the_bundled_stages_are_the_warm_starts_and_the_first_is_the_defaults():
    assert bundled_configs(warmstart=True) == sorted(OLD_RECIPES)
    assert not set(bundled_configs()) & set(OLD_RECIPES)  # train --list shows RL's only
    with pytest.raises(UserError, match="no bundled config"):
        resolve_config("warmstart-1")  # not an RL config
    first = load_sft_config(CONFIG_DIR / "warmstart-1.yaml")
    assert first == SFTConfig(processes=2) and load_sft_config(None) == SFTConfig()
    assert first.episodes == DEFAULT_EPISODES and first.envs == tuple(DEFAULT_EPISODES)


def test_keys_are_read_as_trains_are():
    config = sft_config_from_dict({"envs": ["AgentBandit-v0"], "episodes": 10},
                                  ["lr=1e-4", "history=null", "demonstrators={}", "env_kwargs={prompt_width: 3}"])
    assert config.envs == ("AgentBandit-v0",) and config.lr == 1e-4 and config.history is None
    assert sft_config_from_dict(config.to_dict()) == config  # config.yaml loads back as the same config
    for data, message in [({"epoch": 2}, "unknown config key 'epoch'; did you mean epochs?"),
                          ({"learning_rate": 1e-3}, "unknown config key 'learning_rate'; did you mean lr?"),
                          ({"epochs": "2"}, "epochs='2' must be int"),
                          ({"lr": True}, "lr=True must be float"),
                          ({"envs": "AgentBandit-v0"}, "envs='AgentBandit-v0' must be"),
                          ({"history": -1}, "history=-1 must be >= 0, or null"),
                          ({"oracle_actions": 0}, "oracle_actions=0 must be a positive integer"),
                          ({"processes": 0}, "processes=0 must be a positive integer"),
                          ({"num_threads": 0}, "num_threads=0 must be >= 1"),
                          ({"save_steps": 0}, "save_steps=0 must be >= 1")]:
        with pytest.raises(ConfigError, match=message):
            sft_config_from_dict(data)


def test_the_command_line_takes_a_config_overrides_and_the_old_flags():
    assert warmstart_config(parsed("epochs=3"))[0] == SFTConfig(epochs=3)  # no CONFIG, only an override
    config, legacy = warmstart_config(parsed("warmstart-smoke-1", "epochs=3", "--history", "-1", "--oracle-actions",
                                             "0", "--group-by-length"))
    assert (config.episodes, config.epochs, config.history, config.oracle_actions) == (40, 3, None, None)
    assert legacy == {"history": None, "oracle_actions": None, "group_by_length": True}
    with pytest.raises(UserError, match="--threads 0 must be >= 1"):
        warmstart_config(parsed("--threads", "0"))
    with pytest.raises(UserError, match="--episodes AgentBandit-v0=2: name each env"):
        warmstart_config(parsed("--episodes", "AgentBandit-v0=2"))
    envs = warmstart_config(parsed("envs=[AgentBandit-v0]", "--episodes", "AgentBandit-v0=2"))[0]
    assert envs.episodes == {"AgentBandit-v0": 2}  # --episodes names the envs the config has


def test_the_command_prints_the_config_and_the_new_form_of_old_flags(capsys):
    from agentgym_bench.cli import main

    assert main(["warmstart", "warmstart-smoke-2", "model=/m", "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "episodes: 20\n" in printed and "model: /m\n" in printed
    assert main(["warmstart", "--list"]) == 0
    assert capsys.readouterr().out.split() == sorted(OLD_RECIPES)
    parser = argparse.ArgumentParser(prog="agentgym-bench warmstart")
    configure_warmstart_parser(parser)
    text = parser.format_help()
    assert "old flags, kept for one release" in text and "key=value" in text and "checkpoint-N/" in text
    args = parsed("warmstart-smoke-1", "seed=1", "--episodes", "AgentSokoban-v0=3", "AgentFrozenLake-v0=4",
                  "AgentFrozenLakeNoSlip-v0=5", "AgentBandit-v0=6", "--threads", "1", "--output", "my run")
    config, legacy = warmstart_config(args)
    command = new_form(args.config, args.overrides, legacy)
    assert command == ("agentgym-bench warmstart warmstart-smoke-1 seed=1 episodes='{AgentSokoban-v0: 3, "
                       "AgentFrozenLake-v0: 4, AgentFrozenLakeNoSlip-v0: 5, AgentBandit-v0: 6}' num_threads=1 "
                       "output='my run'")
    import shlex

    again = shlex.split(command)[2:]
    assert warmstart_config(parsed(*again)) == (config, {})  # the printed command makes the same config


def test_a_launch_under_torchrun_takes_torchruns_processes(monkeypatch):
    from trainers.runtime.launch import launch

    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(UserError, match="processes=2 under torchrun's 4"):
        launch(print, SFTConfig(), 2, 1, "warmstart")
