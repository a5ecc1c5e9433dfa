# ruff: noqa: E501 - the ROLL configs below are verbatim, long comment lines included
"""ROLL's documented agentic example configs load unchanged and mean here what they mean in ROLL.

The two YAML blocks are typed in verbatim from ROLL's docs (alibaba/ROLL, ``docs_roll/docs/User Guides/Agentic/
agentic_StarPO.md`` and ``agentic_GiGPO.md``, 2026-08), comments included.
"""

import pytest

from trainers.rl.config import load_config

ROLL_STARPO = """\
# StarPO core config
# StarPO related
adv_estimator: "reinforce"

# rollout_batch_size is the number of trajectories
rollout_batch_size: 1024
val_batch_size: 1024
sequence_length: 1024

advantage_clip: 0.2
ppo_epochs: 1

# pg_clip: 0.1
#dual_clip_loss: True
init_kl_coef: 0.0
whiten_advantages: true
entropy_loss_coef: 0
max_grad_norm: 1.0

reward_normalization:
  grouping: traj_group_id # Can be tags(env_type)/traj_group_id(group)/batch(rollout_batch)... group_by calculates reward/adv
  method: mean # asym_clip / identity / mean_std / mean

train_env_manager:
  max_env_num_per_worker: 16
  num_env_groups: 128
  # under the same group, the env config and env seed are ensured to be equal
  group_size: 8 # grpo's grpo
  tags: [FrozenLake]
  num_groups_partition: [128] # If not set, all env names divide nums equally. Under the same group, the env config and env seed (prompt) are equal in each generation

env_manager_cls: roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager
"""

ROLL_GIGPO = """\
# GiGPO core config
adv_estimator: "gigpo"
batch_adjust_mode: "copy"
step_reward_weight: 1.0
episode_reward_weight: 1.0
step_reward_gamma: 0.95

# rollout_batch_size is the number of trajectories
rollout_batch_size: 1024
val_batch_size: 1024
sequence_length: 1024

advantage_clip: 0.2
ppo_epochs: 1

# pg_clip: 0.1
#dual_clip_loss: True
init_kl_coef: 0.0
whiten_advantages: true
entropy_loss_coef: 0
max_grad_norm: 1.0

reward_normalization:
  grouping: traj_group_id # Can be tags(env_type)/traj_group_id(group)/batch(rollout_batch)... group_by calculates reward/adv
  method: mean # asym_clip / identity / mean_std / mean

train_env_manager:
  max_env_num_per_worker: 16
  num_env_groups: 128
  # under the same group, the env config and env seed are ensured to be equal
  group_size: 8
  tags: [FrozenLake]
  num_groups_partition: [128] # If not set, all env names divide nums equally. Under the same group, the env config and env seed (prompt) are equal in each generation

env_manager_cls: roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager
"""


@pytest.mark.parametrize(("text", "estimator"), [(ROLL_STARPO, "reinforce"), (ROLL_GIGPO, "gigpo")])
def test_rolls_documented_configs_load_unchanged(tmp_path, capsys, text, estimator):
    path = tmp_path / f"roll_{estimator}.yaml"
    path.write_text(text)
    config = load_config(path)
    assert config.adv_estimator == estimator and config.step_level == (estimator == "gigpo")
    assert config.sequence_length == 1024  # a real cap (prompt + reply), not ignored
    assert config.train_env_manager.tags == ["AgentFrozenLake-v0"]
    assert (config.train_env_manager.num_env_groups, config.train_env_manager.group_size) == (128, 8)
    # validation follows val_batch_size: 1024 seeds of the training env, one episode each
    assert (config.val_env_manager.num_env_groups, config.val_env_manager.group_size) == (1024, 1)
    assert config.val_env_manager.tags == ["AgentFrozenLake-v0"] and config.val_batch_size == 1024
    assert (config.advantage_clip, config.whiten_advantages, config.entropy_loss_coef) == (0.2, True, 0)
    assert config.reward_normalization.method == "mean" and not config.uses_reference
    notices = capsys.readouterr().err.splitlines()
    assert "notice: ignoring env_manager_cls (ROLL infrastructure; no meaning here)" in notices
    assert "notice: ignoring train_env_manager.max_env_num_per_worker (ROLL infrastructure; no meaning here)" \
        in notices
    assert "notice: train_env_manager.tags: reading ROLL's FrozenLake as AgentFrozenLake-v0" in notices


def test_asym_clip_and_rolls_explicit_norm_types(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("reward_normalization: {method: asym_clip}\n")
    assert load_config(path).reward_normalization.method == "mean_std"  # ROLL computes mean_std for it
    path.write_text("reward_normalization: {method: mean_std, norm_mean_type: group}\n")  # explicit types win
    assert load_config(path).reward_normalization.method == "mean"
    path.write_text("reward_normalization: {grouping: traj_group_id, norm_mean_type: batch, norm_std_type: batch}\n")
    norm = load_config(path).reward_normalization
    assert (norm.grouping, norm.method) == ("batch", "mean_std")
