"""Config loading: presets, precedence, unknown keys and the invariants checked at start."""

import dataclasses

import pytest

from agentgym_bench.errors import UserError
from trainers.rl.config import ConfigError, TrainConfig, config_from_dict, load_config
from trainers.rl.presets import GIGPO, PRESETS, STARPO, STARPO_S
from trainers.runtime.config_loading import parse_overrides


def test_defaults_are_starpo_without_its_reward_kl():
    default = TrainConfig()
    starpo = config_from_dict({"preset": "starpo"})
    assert dataclasses.replace(starpo, preset=None, add_token_level_kl=False) == default
    assert starpo.kl_in_reward and not default.kl_in_reward and not default.uses_reference  # ROLL: opt-in


def test_starpo_s_is_starpo_plus_the_four_changes():
    changed = {k for k in STARPO_S if STARPO.get(k) != STARPO_S[k]}
    assert changed == {"adv_estimator", "gamma", "lambd", "reward_normalization", "whiten_advantages",
                       "rollout_filter_ratio", "rollout_filter_type", "use_pg_clip_range", "pg_clip_low",
                       "pg_clip_high", "add_token_level_kl", "init_kl_coef"}
    config = config_from_dict({"preset": "starpo_s"})
    assert config.uses_critic and not config.uses_reference
    assert (config.clip_low, config.clip_high) == (0.2, 0.28)
    assert config.groups_kept == 2  # 25% of 8 groups
    # RAGEN's filter keeps the groups of highest reward spread ("std"; "std_rev" would keep the flattest)
    assert config.rollout_filter_type == config_from_dict({"preset": "starpo_s_grpo"}).rollout_filter_type == "std"


def test_gigpo_preset_is_step_level_with_a_kl_loss():
    config = config_from_dict({"preset": "gigpo"})
    assert config.step_level and config.uses_reference and not config.uses_critic
    assert config.reward_normalization.method == "mean"
    # ROLL's FrozenLake GiGPO recipe (examples/qwen2.5-0.5B-agentic/agent_val_frozen_lake_gigpo.yaml)
    assert (config.entropy_loss_coef, config.loss_agg_mode, config.advantage_clip) == (0, "seq-mean-token-mean", 20)
    assert (config.kl_loss_coef, config.kl_loss_type, config.kl_in_reward) == (0.01, "k3", False)
    assert set(GIGPO) <= {f.name for f in dataclasses.fields(TrainConfig)}


def test_precedence_defaults_preset_file_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("preset: starpo_s\npg_clip_high: 0.3\nreward_normalization: {method: mean}\n"
                    "train_env_manager: {num_env_groups: 4, group_size: 8}\nrollout_batch_size: 32\n"
                    "ppo_mini_batch_size: 8\n")
    config = load_config(path, ["pg_clip_high=0.35", "train_env_manager.tags=[AgentSokoban-v0]"])
    assert config.pg_clip_high == 0.35  # override beats file beats preset
    assert config.rollout_filter_ratio == 0.25  # preset
    assert config.reward_normalization.method == "mean"  # file, nested merge keeps the preset's grouping
    assert config.reward_normalization.grouping == "traj_group_id"
    assert config.train_env_manager.tags == ["AgentSokoban-v0"]
    assert config.train_env_manager.num_env_groups == 4


def test_round_trip_through_yaml(tmp_path):
    config = config_from_dict({"preset": "gigpo", "train_env_manager": {"history_length": 0}})
    config.save(tmp_path / "c.yaml")
    assert load_config(tmp_path / "c.yaml") == config


@pytest.mark.parametrize(("data", "message"), [
    ({"group_size": 8}, "did you mean train_env_manager.group_size"),
    ({"lerning_rate": 1e-4}, "did you mean learning_rate"),
    ({"lr": 1e-4}, "unknown config key 'lr'; did you mean learning_rate?"),  # the warm start's name for it
    ({"epochs": 2}, "did you mean ppo_epochs?"),
    ({"reward_normalization": {"groupng": "batch"}}, "reward_normalization.groupng"),
    ({"train_env_manager": {"num_env_group": 8}}, "did you mean train_env_manager.num_env_groups"),
    ({"preset": "ppo"}, "preset='ppo' is not one of starpo, starpo_s, starpo_s_grpo, gigpo"),
    ({"adv_estimator": "ppo"}, "adv_estimator='ppo' is not one of"),
    ({"train_reward": "score"}, "train_reward='score' is not one of"),
])
def test_unknown_keys_and_values_name_the_fix(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


@pytest.mark.parametrize(("data", "message"), [
    ({"rollout_batch_size": 100}, "not a multiple of train_env_manager.group_size=16; make it a multiple, e.g. 96"),
    ({"rollout_batch_size": 64}, "set train_env_manager.num_env_groups=4"),
    ({"rollout_filter_ratio": 0.1}, "keeps no group out of 8: raise it to at least 0.125"),
    ({"rollout_filter_ratio": 0.5, "ppo_mini_batch_size": 48}, "64 trajectories .* after the filter"),
    ({"ppo_mini_batch_size": 32, "micro_batch_size": 5}, "multiple of micro_batch_size=5"),
    ({"train_seed_start": 10}, r"training seeds 10..809 meet validation seeds 0..63"),
    ({"val_seed_start": 10_000, "max_steps": 3}, "meet validation seeds 10000..10063"),
    ({"preset": "gigpo", "reward_normalization": {"method": "identity"}}, "needs reward_normalization.method"),
    ({"train_env_manager": {"num_groups_partition": [4, 3], "tags": ["AgentSokoban-v0", "AgentFrozenLake-v0"]}},
     "summing to num_env_groups=8"),
    ({"use_kl_loss": True, "kl_loss_coef": 0.01, "add_token_level_kl": True}, "pick one place for the KL term"),
    ({"val_batch_size": 32, "val_env_manager": {"num_env_groups": 16}}, "val_batch_size=32 must equal"),
    ({"target_kl": 0.1}, "needs add_token_level_kl=true with init_kl_coef > 0"),
    ({"critic_warmup": 2}, "needs a critic"),
    ({"sequence_length": 16, "max_new_tokens": 32}, "must be an integer above max_new_tokens=32"),
    ({"reward_normalization": {"norm_mean_type": "batch", "norm_std_type": "group"}}, "same scope"),
    ({"train_env_manager": {"tags": ["AgentFrozenLak-v0"]}}, "not a registered env id; did you mean "
                                                             "AgentFrozenLake-v0"),
    ({"train_seed_start": 999_999_500}, r"training seeds 999999500..1000000299 meet agentgym-v1.s retired "
                                        "test seeds 1000000000..1000999999"),
    ({"train_seed_start": 1_999_999_900}, r"training seeds 1999999900..2000000699 meet the benchmark.s held-out "
                                          "test seeds 2000000000..2000999999"),
    ({"val_seed_start": 2_000_000_010}, "validation seeds 2000000010..2000000073 meet the benchmark's held-out"),
    ({"top_p": 0}, "top_p"),
])
def test_inconsistent_values_fail_at_start_with_a_fix(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_a_history_window_means_step_rows_for_every_algorithm():
    assert not config_from_dict({"preset": "starpo_s"}).step_rows
    windowed = config_from_dict({"preset": "starpo_s", "train_env_manager": {"history_length": 0},
                                 "ppo_mini_batch_size": 48})  # rows vary; no multiple-of-kept check
    assert windowed.step_rows and not windowed.step_level and windowed.uses_critic
    assert config_from_dict({"preset": "gigpo"}).step_rows


def test_seed_ranges_are_disjoint_by_default():
    for preset in PRESETS:
        config = config_from_dict({"preset": preset, "max_steps": 10_000})
        train, val = config.train_seed_range, config.val_seed_range
        assert val.stop <= train.start


def test_webshop_test_goals_are_refused_for_training_and_validation():
    for prefix in ("train_env_manager", "val_env_manager"):
        with pytest.raises(ConfigError, match=f"{prefix}.env_kwargs.split=test.*held-out test goals"):
            config_from_dict({prefix: {"tags": ["AgentWebShop-v0"], "env_kwargs": {"split": "test"}}})
    config_from_dict({"train_env_manager": {"tags": ["AgentWebShop-v0"], "env_kwargs": {"split": "train"}}})


def test_overrides_parse_yaml_values():
    assert parse_overrides(["a=1e-4", "b.c=true", "d=[x, y]", "e=null"]) == {
        "a": 1e-4, "b": {"c": True}, "d": ["x", "y"], "e": None}
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["learning_rate"])


def test_wrong_types_are_named(tmp_path):
    with pytest.raises(ConfigError, match="learning_rate='fast' must be float"):
        config_from_dict({"learning_rate": "fast"})
    with pytest.raises(ConfigError, match=r"train_env_manager.tags='AgentSokoban-v0' must be list\[str\]"):
        config_from_dict({"train_env_manager": {"tags": "AgentSokoban-v0"}})
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1e-4\ncritic_learning_rate: 2E-3\n")  # YAML 1.1 would read strings
    config = load_config(path)
    assert (config.learning_rate, config.critic_learning_rate) == (1e-4, 2e-3)


def test_a_config_with_a_base_is_its_base_updated_by_its_own_keys(tmp_path):
    from trainers.runtime.config_loading import CONFIG_DIR

    base = load_config(CONFIG_DIR / "baseline-gigpo.yaml")
    variant = tmp_path / "variant.yaml"
    (tmp_path / "base.yaml").write_text((CONFIG_DIR / "baseline-gigpo.yaml").read_text())
    variant.write_text("base: base.yaml\nlearning_rate: 2.0e-4\ntrain_env_manager:\n  group_size: 8\n"
                       "  num_env_groups: 16\n  num_groups_partition: [4, 2, 2, 2, 6]\n")
    config = load_config(variant)
    assert config.learning_rate == 2e-4 != base.learning_rate
    assert (config.train_env_manager.group_size, config.train_env_manager.num_env_groups) == (8, 16)
    assert config.train_env_manager.tags == base.train_env_manager.tags  # nested keys merged, not replaced
    assert dataclasses.replace(config, learning_rate=base.learning_rate,
                               train_env_manager=base.train_env_manager) == base
    mine = tmp_path / "mine" / "qwen.yaml"  # a user's folder naming a bundled recipe by its name
    mine.parent.mkdir()
    mine.write_text("base: baseline-gigpo\nlearning_rate: 2.0e-4\n")
    assert load_config(mine) == dataclasses.replace(base, learning_rate=2e-4)
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ConfigError, match="leads back to itself"):
        load_config(tmp_path / "a.yaml")


def test_every_bundled_config_loads():
    from trainers.runtime.config_loading import CONFIG_DIR, bundled_configs

    names = bundled_configs()  # RL's; the warm start's (warmstart-*) load in tests/trainers/test_sft_config.py
    assert names == sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if not p.stem.startswith("warmstart-"))
    assert {f"{a}-{e}" for a in ("starpo", "starpo_s", "gigpo") for e in ("frozenlake", "sokoban")} <= set(names)
    for name in names:
        config = load_config(CONFIG_DIR / f"{name}.yaml")
        algorithm = name.removeprefix("baseline-").removeprefix("echo-").removeprefix("pilot-").split("-")[0]
        assert config.preset == algorithm
        assert config.val_seed_range.stop <= config.train_seed_range.start


def test_train_command_reports_config_errors_without_a_traceback(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("group_size: 4\n")
    for args, message in [([str(bad)], "did you mean train_env_manager.group_size"),
                          (["starpo_s-frozenlake", "rollout_filter_ratio=0.01"], "keeps no group")]:
        done = subprocess.run([sys.executable, "-m", "agentgym_bench.cli", "train", *args], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
    from trainers.runtime.config_loading import bundled_configs, resolve_config

    assert "starpo_s-frozenlake" in bundled_configs()
    with pytest.raises(UserError, match="no bundled config of that name"):
        resolve_config("no-such-config")


def test_an_even_split_needs_a_group_for_every_tag():
    tags = ["AgentSokoban-v0", "AgentFrozenLake-v0", "AgentBandit-v0"]
    with pytest.raises(ConfigError, match="fewer than its 3 tags"):
        config_from_dict({"train_env_manager": {"num_env_groups": 2, "group_size": 2, "tags": tags},
                          "rollout_batch_size": 4})


@pytest.mark.parametrize("override", ["train_env_manager=4", "echo_trap=5", "reward_normalization=mean"])
def test_a_plain_value_where_a_section_belongs_is_one_config_error(override):
    with pytest.raises(ConfigError, match=rf"^{override.split('=')[0]}=.* must be a section of keys \("):
        config_from_dict({}, [override])


def test_a_negative_seed_is_refused_before_anything_loads():
    from trainers.sft.sft_config import sft_config_from_dict

    with pytest.raises(ConfigError, match=r"seed=-1 must be an integer from 0"):
        config_from_dict({}, ["seed=-1"])
    with pytest.raises(ConfigError, match=r"seed=-1 must be an integer from 0"):
        sft_config_from_dict({}, ["seed=-1"])


def test_clip_ratio_c_must_be_above_one():
    assert TrainConfig(clip_ratio_c=3.0).dual_clip_bound == 3.0 and TrainConfig().dual_clip_bound is None
    with pytest.raises(ConfigError, match=r"clip_ratio_c=1.0 must be > 1 .*, or null"):
        config_from_dict({"clip_ratio_c": 1.0})


def test_the_default_start_is_the_warm_start_under_the_home_set_at_call_time(tmp_path, monkeypatch):
    """The default ``pretrain`` is the name ``warmstart``, so it follows ``AGENTGYM_BENCH_HOME`` like every name."""
    from agentgym_bench.paths import resolve_model

    monkeypatch.setenv("AGENTGYM_BENCH_HOME", str(tmp_path))
    (tmp_path / "models" / "warmstart").mkdir(parents=True)
    assert resolve_model(TrainConfig().pretrain) == str(tmp_path / "models" / "warmstart")
