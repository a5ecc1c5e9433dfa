"""Two-player rollouts for the trainers (trainers/rl/matches.py): real Bargain, the real default model."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("pettingzoo", reason="PettingZoo envs need the multiagent extra: pip install -e '.[multiagent]'")

from agentgym_bench.multiagent.bargain import BargainEnv  # noqa: E402
from agentgym_bench.multiagent.selfplay import ScriptedBargainPolicy  # noqa: E402
from agentgym_bench.rollout.hf import HFPolicy  # noqa: E402
from tests.multiagent.test_selfplay import Counting  # noqa: E402
from trainers.rl.config import ConfigError, config_from_dict  # noqa: E402
from trainers.rl.matches import MatchGroups  # noqa: E402
from trainers.rl.samples import step_samples  # noqa: E402


@pytest.fixture(scope="module")
def policy_factory(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer

    def make(seed=0):
        return HFPolicy(model, tokenizer, max_new_tokens=8, seed=seed)

    return make


def _replies(trajectories):
    return [[(t.reply, t.reward, t.state_key) for t in trajectory.turns] for trajectory in trajectories]


def test_the_learner_seat_only_grouped_seeded_with_state_keys_and_reply_masks(policy_factory, model_and_tokenizer):
    groups = MatchGroups("Bargain-v0", 2, 2, opponent="random", seed=10_000, env_kwargs={"max_rounds": 3})
    trajectories = groups.rollout(policy_factory(), history=0)
    assert len(trajectories) == 4 and groups.iteration == 1 and groups.group_seeds() == [10_002, 10_003]
    assert [t.group for t in trajectories] == [0, 0, 1, 1]
    assert [t.seed for t in trajectories] == [10_000, 10_000, 10_001, 10_001]
    for i, trajectory in enumerate(trajectories):
        seat = f"player_{i // 2}"  # alternate: the learner's seat is player_{group % 2}
        env = BargainEnv(max_rounds=3)
        observations, _ = env.reset(seed=trajectory.seed)
        assert trajectory.turns[0].observation == observations[seat]["text"]  # the learner's private values
        assert 1 <= len(trajectory.turns) <= 3
        for k, turn in enumerate(trajectory.turns):
            assert turn.state_key.startswith(f"round={k};") and turn.token_ids and turn.logprobs
        assert trajectory.turns[-1].info["outcome"] in ("win", "draw", "loss")
        assert trajectory.success == (trajectory.turns[-1].info["outcome"] == "win")
    samples = step_samples(trajectories, model_and_tokenizer[1])
    assert samples.loss_mask.sum() == sum(len(turn.token_ids) for t in trajectories for turn in t.turns)
    assert len(set(samples.state_ids.tolist())) > 1


def test_a_seeded_rollout_is_deterministic_and_validation_meets_the_same_opponent(policy_factory):
    runs = [MatchGroups("Bargain-v0", 2, 2, opponent="random", opponent_seed=5).rollout(policy_factory(seed=3),
                                                                                        history=0)
            for _ in range(2)]
    assert _replies(runs[0]) == _replies(runs[1])
    validation = MatchGroups("Bargain-v0", 6, 1, opponent="random", fixed_seeds=True)
    first, second = (validation.rollout(ScriptedBargainPolicy()) for _ in range(2))
    assert _replies(first) == _replies(second) and validation.group_seeds() == list(range(6))
    training = MatchGroups("Bargain-v0", 6, 1, opponent="random")
    assert _replies(training.rollout(ScriptedBargainPolicy())) != _replies(training.rollout(ScriptedBargainPolicy()))


def test_shards_split_the_match_groups_contiguously():
    halves = [MatchGroups("Bargain-v0", 4, 1, opponent="random", shard=(rank, 2)).groups for rank in (0, 1)]
    assert halves == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="4 match groups cannot be split evenly over 3 processes"):
        MatchGroups("Bargain-v0", 4, 1, opponent="random", shard=(0, 3))


def test_self_play_is_one_batched_call_per_tick_for_both_seats(policy_factory):
    policy = Counting(policy_factory())
    trajectories = MatchGroups("Bargain-v0", 2, 2, opponent="self", env_kwargs={"max_rounds": 2}).rollout(
        policy, history=0)
    assert len(trajectories) == 4 and policy.calls[0] == 4  # each match's seat to move, learner or not, in one call
    assert sum(policy.calls) == 2 * sum(len(t.turns) for t in trajectories)  # both seats move every Bargain round


def test_the_snapshot_is_frozen_between_refreshes(model_dir):
    learner = HFPolicy.from_pretrained(str(model_dir), max_new_tokens=4)
    groups = MatchGroups("Bargain-v0", 2, 1, opponent="snapshot", snapshot_every=2, env_kwargs={"max_rounds": 1})
    start = {k: v.clone() for k, v in learner.model.state_dict().items()}
    groups.rollout(learner, history=0)
    snapshot = groups.snapshot
    assert snapshot is not learner and snapshot.model is not learner.model and groups.snapshot_iteration == 0
    assert not any(p.requires_grad for p in snapshot.model.parameters())

    def same(model, weights):
        return all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())

    with torch.no_grad():
        for param in learner.model.parameters():
            param.add_(0.01)
    moved = {k: v.clone() for k, v in learner.model.state_dict().items()}
    groups.rollout(learner, history=0)  # rollout 1: not due, the snapshot keeps the start weights
    assert same(snapshot.model, start) and not same(snapshot.model, moved)
    groups.rollout(learner, history=0)  # rollout 2: refreshed from the moved learner
    assert groups.snapshot is snapshot and groups.snapshot_iteration == 2 and same(snapshot.model, moved)


def _config(model_dir, tmp_path, **overrides):
    base = {
        "preset": "starpo", "pretrain": str(model_dir), "output_dir": str(tmp_path / "run"), "seed": 1,
        "max_steps": 2, "eval_steps": 2, "save_steps": 0, "progress": False, "rollout_batch_size": 4,
        "val_batch_size": 4, "ppo_mini_batch_size": 4, "micro_batch_size": 4, "max_new_tokens": 8,
        "train_env_manager": {"num_env_groups": 2, "group_size": 2, "tags": ["Bargain-v0"], "opponent": "random",
                              "env_kwargs": {"max_rounds": 2}, "history_length": 0},
    }
    for key, value in overrides.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return base


def test_config_keys_and_their_errors(model_dir, tmp_path):
    config = config_from_dict(_config(model_dir, tmp_path))
    assert config.val_env_manager.opponent == "random" and config.val_env_manager.tags == ["Bargain-v0"]
    assert config.val_env_manager.learner_seats == "alternate"
    assert config.val_env_manager.env_kwargs == {"max_rounds": 2}
    cases = {
        "val_env_manager.opponent=self": "set val_env_manager.opponent",
        "train_env_manager.opponent=snapshot": "set val_env_manager.opponent",
        "train_env_manager.opponent=friend": "opponent='friend' is not one of",
        "train_env_manager.tags=[AgentFrozenLake-v0]": "one two-player env id",
        "train_env_manager.tags=[TextArena/TicTacToe-v0]": "plays Bargain only",
        "sequence_length=512": "not implemented for two-player",
        "train_env_manager.learner_seats=player_2": "learner_seats='player_2' is not one of",
    }
    for override, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            config_from_dict(_config(model_dir, tmp_path), [override])
    snapshot = config_from_dict(_config(model_dir, tmp_path), ["train_env_manager.opponent=snapshot",
                                                               "val_env_manager.opponent=scripted"])
    assert snapshot.train_env_manager.snapshot_every == 10 and snapshot.val_env_manager.opponent == "scripted"


@pytest.mark.parametrize("preset", ["starpo", "gigpo"])
def test_a_training_run_on_bargain_logs_win_draw_loss(model_dir, tmp_path, preset):
    from trainers.rl.train import main

    config = config_from_dict(_config(model_dir, tmp_path, preset=preset))
    result = main(config)
    records = [json.loads(line) for line in (result.output_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2]
    for record in (records[0], records[-1]):
        assert record["val/win"] + record["val/draw"] + record["val/loss"] == pytest.approx(1.0)
        assert record["val/success"] == record["val/win"] and 0 <= record["val/score"] <= 1
    assert "reward/win" in records[1] and len(result.first_eval) == len(result.last_eval) == 4


@pytest.mark.slow
def test_a_snapshot_self_play_run_resumes_to_the_same_metrics_and_weights(model_dir, tmp_path):
    """Holds exactly on any machine: the snapshot is re-copied at the checkpoint (a multiple of snapshot_every) and
    the opponent's stream restarts from the rollout index, so the resumed run replays the uninterrupted one."""
    from trainers.rl.train import main
    from trainers.runtime.metrics import read_metrics

    overrides = {"max_steps": 4, "save_steps": 2, "eval_steps": 2, "preset": "gigpo",
                 "train_env_manager": {"opponent": "snapshot", "snapshot_every": 2},
                 "val_env_manager": {"opponent": "scripted"}}
    straight = config_from_dict(_config(model_dir, tmp_path / "straight", **overrides))
    main(straight)
    resumed_dir = tmp_path / "resumed"
    checkpoint = straight.output_dir + "/checkpoint-2"
    main(config_from_dict({**straight.to_dict(), "output_dir": str(resumed_dir),
                           "resume_from_checkpoint": checkpoint}))

    def strip(records):
        return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records if r["step"] > 2]

    uninterrupted, resumed = read_metrics(tmp_path / "straight" / "run" / "metrics.jsonl"), \
        read_metrics(resumed_dir / "metrics.jsonl")
    assert [r["step"] for r in strip(resumed)] == [3, 4] and strip(resumed) == strip(uninterrupted)
    assert uninterrupted[-1]["rollout/format_valid"] is not None
    from transformers import AutoModelForCausalLM

    a = AutoModelForCausalLM.from_pretrained(tmp_path / "straight" / "run" / "checkpoint-4" / "actor").state_dict()
    b = AutoModelForCausalLM.from_pretrained(resumed_dir / "checkpoint-4" / "actor").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
