"""The TRL route with a real ``GRPOTrainer`` and the locally built default model (CPU)."""

from __future__ import annotations

import os
import warnings

import pytest

pytest.importorskip("trl", reason="the TRL route needs trl: pip install 'agentgym-bench[trl]'")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from agentgym_bench.adapters.trl import (  # noqa: E402
    EpisodeRollout,
    checkpointing_off,
    completion_view,
    env_reward,
    episode_dataset,
    episode_prompt,
    parse_episode_prompt,
)
from agentgym_bench.rollout.default_model import build_default_model, load_model  # noqa: E402
from agentgym_bench.rollout.tokens import trajectory_token_view  # noqa: E402
from agentgym_bench.seeds import TEST_SEEDS  # noqa: E402
from tests.adapters.episodes import native_episode  # noqa: E402

ENV = "AgentFrozenLake-v0"
KWARGS = {"prompt": "compact"}


def grpo_config(tmp_path, **overrides) -> GRPOConfig:
    settings = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none",
                    per_device_train_batch_size=4, num_generations=2, max_completion_length=256,
                    save_strategy="no", max_steps=2, logging_steps=1, seed=0, learning_rate=1e-3,
                    **checkpointing_off())
    return GRPOConfig(**{**settings, **overrides})


def test_checkpointing_off_is_off_without_a_deprecation_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        config = grpo_config(tmp_path)
    assert config.gradient_checkpointing is False
    assert getattr(config, "activation_checkpointing", False) is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TRL's own default sets the old name
        assert GRPOConfig(output_dir=str(tmp_path / "on"), use_cpu=True, bf16=False).gradient_checkpointing is True


def assert_native(trajectory) -> None:
    """The episode is what the native env gives for the same seed and replies."""
    replies = [t.reply for t in trajectory.turns]
    expected = native_episode(trajectory.env_id, trajectory.seed, replies, **KWARGS)
    observations = [t.observation for t in trajectory.turns] + [trajectory.final_observation]
    assert observations == [step[0] for step in expected]
    assert [t.reward for t in trajectory.turns] == [step[1] for step in expected[1:]]
    assert trajectory.success == expected[-1][4]["success"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_default_model(tmp_path_factory.mktemp("model") / "default")


@pytest.fixture(scope="module")
def trainer(model_dir, tmp_path_factory):
    model, tokenizer = load_model(model_dir)
    return GRPOTrainer(model=model, reward_funcs=[env_reward], args=grpo_config(tmp_path_factory.mktemp("trl")),
                       train_dataset=episode_dataset(ENV, range(10_000, 10_008)), processing_class=tokenizer,
                       rollout_func=EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8))


def test_rollout_plays_native_episodes_and_returns_the_token_view(trainer):
    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=3)
    prompts = [episode_prompt(ENV, s) for s in (10_000, 10_000, 10_005, 10_005)]
    out = rollout(prompts, trainer)
    tokenizer = trainer.processing_class
    assert [t.seed for t in rollout.trajectories] == [10_000, 10_000, 10_005, 10_005]
    assert rollout.trajectories[0].turns[0].observation == rollout.trajectories[1].turns[0].observation  # one group
    for i, trajectory in enumerate(rollout.trajectories):
        assert_native(trajectory)
        view = trajectory_token_view(trajectory, tokenizer)
        assert out["prompt_ids"][i] + out["completion_ids"][i] == view.input_ids
        assert len(out["completion_ids"][i]) == len(out["logprobs"][i]) == len(out["env_mask"][i])
        model_tokens = [t for t, m in zip(out["completion_ids"][i], out["env_mask"][i], strict=True) if m]
        assert model_tokens == [tok for turn in trajectory.turns for tok in turn.token_ids]
        env_text = tokenizer.decode([t for t, m in zip(out["completion_ids"][i], out["env_mask"][i], strict=True)
                                     if not m], skip_special_tokens=True)
        for turn in trajectory.turns[1:]:
            assert turn.observation in env_text  # observations after the first are env tokens, masked out
        assert out["env_reward"][i] == pytest.approx(trajectory.episode_reward)
        sampled = [lp for turn in trajectory.turns for lp in turn.logprobs]
        assert [lp for lp, m in zip(out["logprobs"][i], out["env_mask"][i], strict=True) if m] == sampled
    assert out["prompt_ids"][0] == out["prompt_ids"][1] != out["prompt_ids"][2]


def test_the_same_seed_gives_the_same_rollout(trainer):
    prompts = [episode_prompt(ENV, 10_001)] * 2
    first = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=1)(prompts, trainer)
    second = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8, seed=1)(prompts, trainer)
    assert first == second


def test_prompts_that_name_no_episode_are_clear_errors(trainer):
    with pytest.raises(ValueError, match="does not name an episode"):
        EpisodeRollout()(["tell me a story"], trainer)
    with pytest.raises(ValueError, match="unknown agent env id"):
        parse_episode_prompt('{"env_id": "AgentChess-v0", "seed": 1}')
    with pytest.raises(ValueError, match="non-negative"):
        episode_prompt(ENV, -3)
    with pytest.raises(ValueError, match="held-out test seeds"):
        episode_dataset(ENV, [10_000, TEST_SEEDS.start + 5])
    assert parse_episode_prompt([{"role": "user", "content": episode_prompt(ENV, 4)}]) == (ENV, 4)


def test_training_seeds_cannot_play_webshop_test_goals(trainer):
    rollout = EpisodeRollout(env_kwargs={"split": "test"}, max_new_tokens=8)
    with pytest.raises(ValueError, match="test goals are held out"):
        rollout([episode_prompt("AgentWebShop-v0", 10_000)], trainer)


def test_completion_view_without_logprobs_fills_zeros(trainer):
    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=8)
    rollout([episode_prompt(ENV, 10_002)], trainer)
    trajectory = rollout.trajectories[0]
    for turn in trajectory.turns:
        turn.logprobs = None
    _, completion_ids, logprobs, env_mask = completion_view(trajectory, trainer.processing_class)
    assert logprobs == [0.0] * len(completion_ids) and sum(env_mask) > 0


@pytest.mark.slow
def test_two_grpo_steps_on_cpu_change_the_model_and_train_on_the_env_rewards(model_dir, tmp_path):
    """A short warm start (so rewards vary within groups), then 2 GRPO steps through ``rollout_func``."""
    from agentgym_bench.rollout.warmstart import WarmStartConfig, collect_demonstrations, finetune

    torch.set_num_threads(1)
    model, tokenizer = load_model(model_dir)
    config = WarmStartConfig(envs=(ENV,), episodes=200, epochs=3, history=None)
    finetune(model, tokenizer, collect_demonstrations(config), config)

    rollout = EpisodeRollout(env_kwargs=KWARGS, max_new_tokens=12)
    produced, seen = [], []

    def recording_rollout(prompts, trainer):
        out = rollout(prompts, trainer)
        produced.append((list(rollout.trajectories), list(out["env_reward"])))
        return out

    def recording_reward(completions, env_reward, **kwargs):
        seen.append(list(env_reward))
        return list(env_reward)

    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer = GRPOTrainer(model=model, reward_funcs=[recording_reward],
                          args=grpo_config(tmp_path, per_device_train_batch_size=8, num_generations=4),
                          train_dataset=episode_dataset(ENV, range(10_000, 10_032)), processing_class=tokenizer,
                          rollout_func=recording_rollout)
    trainer.train()

    assert trainer.state.global_step == 2 and len(seen) == len(produced) == 2
    for (trajectories, rewards), rewards_seen, log in zip(produced, seen, trainer.state.log_history, strict=False):
        assert rewards_seen == rewards == [t.episode_reward for t in trajectories]
        for trajectory in trajectories:
            assert_native(trajectory)
        assert log["reward"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-6)
    assert any(len(set(r)) > 1 for r in seen), "no reward variance: GRPO had nothing to learn from"
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "GRPO steps left every parameter unchanged"


@pytest.mark.slow
def test_the_example_script_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_frozenlake.py"
    env = {**os.environ, "AGENTGYM_BENCH_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(script), "--max-steps", "1", "--batch-size", "4", "--num-generations",
                          "2", "--output", str(tmp_path / "trained")], capture_output=True, text=True, timeout=600,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "step   1  reward" in out.stdout
    assert (tmp_path / "trained" / "config.json").exists()
