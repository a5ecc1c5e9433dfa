"""The scoring/update module: advantages per episode on turn rows, reward clip, the KL loss, old log-probs as ROLL
takes them, and the critic warm-up."""

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import trainers.rl.ppo
from tests.trainers.conftest import tiny_config_dict
from trainers.rl.config import config_from_dict
from trainers.rl.models import load_models, make_optimizers
from trainers.rl.ppo import Batch, compute_advantages, may_share_prompts, ppo_update, score_samples
from trainers.rl.samples import Samples, step_samples
from trainers.rl.train import recompute_old_logprobs
from trainers.runtime.distributed import Dist

CPU = Dist(0, 1, torch.device("cpu"))


def turn_rows(episode_ids, scores, group_ids=None):
    """Samples of one generated token per row (row k = one turn of ``episode_ids[k]``)."""
    n = len(episode_ids)
    episode_ids = torch.tensor(episode_ids)
    step = torch.tensor([sum(1 for e in episode_ids[:k] if e == episode_ids[k]) for k in range(n)])
    mask = torch.tensor([[False, True]] * n)
    return Samples(
        input_ids=torch.ones(n, 2, dtype=torch.long), attention_mask=torch.ones(n, 2, dtype=torch.long),
        loss_mask=mask, token_rewards=torch.zeros(n, 2), scores=torch.tensor(scores, dtype=torch.float32),
        success=torch.zeros(n, dtype=torch.bool),
        group_ids=torch.zeros(n, dtype=torch.long) if group_ids is None else torch.tensor(group_ids),
        tag_ids=torch.zeros(n, dtype=torch.long), episode_ids=episode_ids, state_ids=torch.arange(n),
        step_index=step, step_rewards=torch.zeros(n))


@pytest.mark.parametrize("estimator", ["grpo", "gae"])
def test_episode_scores_are_normalised_once_per_episode_on_turn_rows(estimator):
    # episode 0 has three turn rows, episode 1 one: per episode the group mean is (3 + 1) / 2 = 2, not the row
    # mean (3 * 3 + 1) / 4 = 2.5 that weights episode 0 three times
    samples = turn_rows([0, 0, 0, 1], [3.0, 3.0, 3.0, 1.0])
    config = config_from_dict({"adv_estimator": estimator, "reward_normalization": {"method": "mean"},
                               "train_env_manager": {"history_length": 0}, "init_kl_coef": 0.0})
    scored = {"old_logprob": torch.zeros(4, 1), "values": torch.zeros(4, 1)}
    batch, _ = compute_advantages(config, samples, scored)
    # gae with gamma = lambda = 1 and zero values: every turn row of an episode carries its final score
    assert batch.advantages[:, 0].tolist() == pytest.approx([1.0, 1.0, 1.0, -1.0])
    clipped, _ = compute_advantages(dataclasses.replace(config, reward_clip=0.5), samples, scored)
    assert clipped.advantages[:, 0].tolist() == pytest.approx([0.5, 0.5, 0.5, -0.5])


def test_old_logprobs_follow_rolls_rule(tiny_model):
    base = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "starpo", add_token_level_kl=False,
                                             enable_old_logprobs_recompute=False))
    assert not recompute_old_logprobs(base, rows=base.ppo_mini_batch_size)  # one step per epoch: reuse
    assert recompute_old_logprobs(base, rows=base.ppo_mini_batch_size + 1)  # the weights move before later rows
    assert recompute_old_logprobs(dataclasses.replace(base, add_token_level_kl=True), rows=1)  # the KL reward
    gigpo = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "gigpo",
                                              enable_old_logprobs_recompute=False))
    assert recompute_old_logprobs(gigpo, rows=1)  # ROLL forces it for GiGPO
    assert not recompute_old_logprobs(dataclasses.replace(gigpo, use_sampler_logprobs=True), rows=100)


@pytest.fixture(scope="module")
def rows(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.hf import HFPolicy
    from tests.trainers.conftest import TINY_ENV_KWARGS

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    groups = EnvGroups(["AgentFrozenLake-v0"], [2], 4, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    trajectories = groups.rollout(HFPolicy(model, tokenizer, max_new_tokens=8, seed=0), history=0)
    return step_samples(trajectories, tokenizer)


def test_reusing_the_updates_forward_pass_makes_the_recomputed_update(tiny_model, rows):
    """``enable_old_logprobs_recompute: false`` with one mini-batch: the first forward pass gives the old log-probs;
    the update equals the one with a separate scoring pass (ratio exactly 1 either way)."""
    n = len(rows)
    config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "starpo", add_token_level_kl=False,
                                               ppo_mini_batch_size=n, micro_batch_size=n, ppo_epochs=2,
                                               enable_old_logprobs_recompute=False,
                                               train_env_manager={"history_length": 0}))
    results = {}
    for recompute in (True, False):
        models = load_models(config, CPU)
        optimizers, _ = make_optimizers(config, models)
        scored = score_samples(config, models, rows, CPU, old_logprob=recompute)
        batch, _ = compute_advantages(config, rows, scored)
        assert (batch.old_logprob is None) == (not recompute)
        metrics = ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0))
        results[recompute] = (metrics, models.actor_module.state_dict())
    for key in ("loss/policy", "loss/grad_norm", "loss/approx_kl"):
        assert results[False][0][key] == pytest.approx(results[True][0][key], rel=1e-5, abs=1e-7), key
    for name, value in results[True][1].items():
        torch.testing.assert_close(results[False][1][name], value, rtol=1e-5, atol=1e-6)


def exact_kl(actor, reference, samples):
    """Mean over generated positions of the exact KL(actor || reference) of the next-token distributions."""
    with torch.no_grad():
        mask = samples.loss_mask[:, 1:]
        logp = torch.log_softmax(actor(input_ids=samples.input_ids).logits[:, :-1], -1)[mask]
        logq = torch.log_softmax(reference(input_ids=samples.input_ids).logits[:, :-1], -1)[mask]
        return float((logp.exp() * (logp - logq)).sum(-1).mean())


def test_the_kl_loss_pulls_the_policy_toward_the_reference(tiny_model, rows):
    """Zero advantages and no entropy bonus: the only gradient is the KL loss (k3 by default), and it must lower the
    true KL to the reference. (A k1 loss has zero gradient in expectation, so it could not.)"""
    n = len(rows)
    config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "gigpo", ppo_mini_batch_size=n,
                                               micro_batch_size=n, ppo_epochs=20, kl_loss_coef=1.0,
                                               learning_rate=3e-3))
    assert config.kl_loss_type == "k3" and config.entropy_loss_coef == 0
    models = load_models(config, CPU)
    with torch.no_grad():  # move the actor away from the reference
        gen = torch.Generator().manual_seed(0)
        for param in models.actor_module.parameters():
            param.add_(0.3 * torch.randn(param.shape, generator=gen))
    optimizers, _ = make_optimizers(config, models)
    scored = score_samples(config, models, rows, CPU)
    batch = Batch(rows, rows.loss_mask[:, 1:], scored["old_logprob"], torch.zeros(n, rows.input_ids.shape[1] - 1),
                  scored["ref_logprob"])
    before = exact_kl(models.actor_module, models.reference, rows)
    metrics = ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0))
    after = exact_kl(models.actor_module, models.reference, rows)
    assert metrics["loss/kl"] > 0
    assert after < 0.7 * before, (before, after)


def test_critic_warmup_leaves_the_actor_alone(tiny_model, tmp_path):
    from trainers.rl.train import main

    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo_s", critic_warmup=1, max_steps=1,
                                               eval_steps=1, save_steps=1))
    before = copy.deepcopy(load_models(config, CPU))
    record = main(config).records[-1]
    assert "loss/grad_norm" not in record and record["critic/grad_norm"] > 0
    actor = load_models(dataclasses.replace(config, pretrain=str(tmp_path / "checkpoint-1" / "actor")), CPU)
    for name, value in before.actor_module.state_dict().items():
        assert torch.equal(actor.actor_module.state_dict()[name], value), name


def test_the_actors_schedule_runs_over_the_iterations_that_update_it(tiny_model, tmp_path):
    """With a critic warm-up the actor steps its schedule only when it is updated, so its schedule spans
    ``max_steps - critic_warmup`` iterations and decays to 0 at the last one, as the critic's does over all."""
    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo_s", critic_warmup=4, max_steps=10,
                                               lr_scheduler_type="linear", warmup_steps=0))
    _, schedulers = make_optimizers(config, load_models(config, CPU))
    for name, updates in (("actor", 6), ("critic", 10)):
        scheduler, rates = schedulers[name], []
        for _ in range(updates):
            rates.append(scheduler.get_last_lr()[0])
            scheduler.step()
        start = config.learning_rate if name == "actor" else config.critic_learning_rate
        assert rates[0] == start and rates == sorted(rates, reverse=True) and rates[-1] > 0, (name, rates)
        assert scheduler.get_last_lr()[0] == 0, name


def test_gradient_checkpointing_makes_the_same_update(tiny_model, rows, monkeypatch):
    n = len(rows)
    assert not may_share_prompts(config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "starpo_s",
                                                                 gradient_checkpointing=True)), None)
    # checkpointing turns the KV cache off, so prompts are not shared then: both sides run every row whole (sharing
    # gives the same gradients up to round-off, which Adam's first step scales up on near-zero gradients)
    monkeypatch.setattr(trainers.rl.ppo, "may_share_prompts", lambda *_: False)
    results = []
    for checkpointing in (False, True):
        config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "starpo_s", ppo_mini_batch_size=n,
                                                   micro_batch_size=n, gradient_checkpointing=checkpointing,
                                                   train_env_manager={"history_length": 0}))
        models = load_models(config, CPU)
        optimizers, _ = make_optimizers(config, models)
        batch, _ = compute_advantages(config, rows, score_samples(config, models, rows, CPU))
        metrics = ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0))
        assert not models.actor_module.training  # back in eval mode for generation
        assert models.actor_module.is_activation_checkpointing == checkpointing
        results.append((metrics, models.actor_module.state_dict(), models.critic_module.state_dict()))
    for key in ("loss/policy", "loss/grad_norm", "critic/value_loss", "critic/grad_norm"):
        assert results[1][0][key] == pytest.approx(results[0][0][key], rel=1e-5), key
    for part in (1, 2):
        for name, value in results[0][part].items():
            torch.testing.assert_close(results[1][part][name], value, rtol=1e-5, atol=1e-6)


def test_rows_without_gradient_are_forwarded_without_one_for_the_same_gradient(tiny_model, rows, monkeypatch):
    """GiGPO's recipe (no entropy bonus, no KL loss): rows whose advantages are all 0 run without gradient, and the
    gradient and the logged losses and entropy are those of forwarding every row with it, up to round-off;
    micro-batches of two, so that some hold only such rows. With the entropy bonus every row keeps its gradient."""
    n = len(rows)
    config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "gigpo", use_kl_loss=False,
                                               kl_loss_coef=0.0, train_env_manager={"history_length": 0}))
    mask = rows.loss_mask[:, 1:]
    gen = torch.Generator().manual_seed(0)
    advantages = torch.randn(mask.shape, generator=gen) * mask * (torch.arange(n) % 3 == 0)[:, None]
    models = load_models(config, CPU)
    batch = Batch(rows, mask, score_samples(config, models, rows, CPU)["old_logprob"], advantages)
    idle = trainers.rl.ppo.rows_without_gradient(config, models, batch)
    assert idle is not None and 0 < int(idle.sum()) < n
    bonus = dataclasses.replace(config, entropy_loss_coef=0.001)
    assert trainers.rl.ppo.rows_without_gradient(bonus, models, batch) is None
    results = []
    for skip in (True, False):
        if not skip:
            monkeypatch.setattr(trainers.rl.ppo, "rows_without_gradient", lambda *_: None)
        models = load_models(config, CPU)
        stats = trainers.rl.ppo._Mean()
        for start in range(0, n, 2):
            trainers.rl.ppo.micro_batch_loss(config, models, batch, torch.arange(start, min(start + 2, n)),
                                             float(mask.sum()), CPU, stats, update_actor=True, sync=True)
        grads = {name: p.grad for name, p in models.actor_module.named_parameters()}
        results.append((stats.result(CPU), grads))
    for key in ("loss/policy", "loss/entropy", "loss/approx_kl", "loss/clipfrac"):
        assert results[0][0][key] == pytest.approx(results[1][0][key], rel=1e-5, abs=1e-7), key
    scale = max(float(g.abs().max()) for g in results[1][1].values())
    assert scale > 0
    for name, grad in results[1][1].items():
        torch.testing.assert_close(results[0][1][name], grad, rtol=1e-4, atol=1e-5 * scale)


def test_target_kl_adapts_the_reward_kl_coefficient_and_resumes_with_it(tiny_model, tmp_path):
    from trainers.rl.train import main

    config = config_from_dict(tiny_config_dict(tiny_model, tmp_path, "starpo", init_kl_coef=0.5, target_kl=1e-6,
                                               kl_horizon=16, max_steps=2, eval_steps=2, save_steps=1))
    records = main(config).records
    coefs = [r["reward/kl_coef"] for r in records[1:]]
    assert records[1]["reward/kl"] < 1e-6  # the first batch's KL is far below the target ...
    assert coefs[0] == 0.5 and coefs[1] < 0.5 * (1 - 0.2 * 8 / 16)  # ... so the coefficient falls (>= 8 rows)
    state = torch.load(tmp_path / "checkpoint-1" / "trainer_state.pt", weights_only=False)
    assert state["kl_coef"] == pytest.approx(coefs[1])  # a resumed run continues from it


def test_scores_are_normalised_within_each_group_not_over_the_batch():
    """Group 0 holds a success and a failure, group 1 two failures: group 1 carries no signal (advantage 0)."""
    samples = turn_rows([0, 1, 2, 3], [1.0, 0.0, 0.0, 0.0], group_ids=[0, 0, 1, 1])
    config = config_from_dict({"adv_estimator": "grpo", "init_kl_coef": 0.0,
                               "train_env_manager": {"history_length": 0},
                               "reward_normalization": {"method": "mean", "grouping": "traj_group_id"}})
    batch, _ = compute_advantages(config, samples, {"old_logprob": torch.zeros(4, 1)})
    assert batch.advantages[:, 0].tolist() == pytest.approx([0.5, -0.5, 0.0, 0.0])


def test_the_kl_reward_is_a_penalty():
    """With equal scores the only advantage is the KL reward, -beta * KL(pi || pi_ref): negative where pi moved."""
    samples = turn_rows([0, 1], [1.0, 1.0])
    config = config_from_dict({"adv_estimator": "grpo", "add_token_level_kl": True, "init_kl_coef": 0.1,
                               "kl_penalty": "kl", "train_env_manager": {"history_length": 0},
                               "reward_normalization": {"method": "mean"}})
    assert config.kl_in_reward
    scored = {"old_logprob": torch.zeros(2, 1), "ref_logprob": torch.full((2, 1), -1.0)}  # KL estimate 1 per token
    batch, info = compute_advantages(config, samples, scored)
    assert batch.advantages[:, 0].tolist() == pytest.approx([-0.1, -0.1])
    assert info["reward/kl"] == pytest.approx(1.0)


def test_gigpo_weights_its_episode_and_step_parts_as_configured():
    """Episode weight 1 and step weight 0 is GRPO's episode advantage; the other way round, every state here is its
    own anchor group, so the step part is 0."""
    samples = dataclasses.replace(turn_rows([0, 1], [1.0, 0.0]), step_rewards=torch.tensor([1.0, 0.0]))
    common = {"adv_estimator": "gigpo", "init_kl_coef": 0.0, "train_env_manager": {"history_length": 0},
              "reward_normalization": {"method": "mean"}}
    scored = {"old_logprob": torch.zeros(2, 1)}
    episode_only = config_from_dict({**common, "episode_reward_weight": 1.0, "step_reward_weight": 0.0})
    advantages = compute_advantages(episode_only, samples, scored)[0].advantages[:, 0]
    assert advantages.tolist() == pytest.approx([0.5, -0.5])
    step_only = config_from_dict({**common, "episode_reward_weight": 0.0, "step_reward_weight": 1.0})
    assert compute_advantages(step_only, samples, scored)[0].advantages[:, 0].tolist() == pytest.approx([0.0, 0.0])


def _one_update(tiny_model, rows, batch_change, **overrides):
    """The metrics of one ``ppo_update`` of the tiny model on ``rows`` (one mini-batch, one epoch, GRPO without a KL),
    its batch changed by ``batch_change(batch)`` first."""
    n = len(rows)
    config = config_from_dict(tiny_config_dict(tiny_model, Path("unused"), "starpo", add_token_level_kl=False,
                                               ppo_mini_batch_size=n, micro_batch_size=n, ppo_epochs=1,
                                               train_env_manager={"history_length": 0}, **overrides))
    models = load_models(config, CPU)
    optimizers, _ = make_optimizers(config, models)
    batch, _ = compute_advantages(config, rows, score_samples(config, models, rows, CPU))
    batch = batch_change(batch)
    return ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0)), config, models, optimizers


def test_the_update_clips_the_ratio_at_clip_high_for_a_positive_advantage(tiny_model, rows):
    """Every token's ratio at 1.25 with A > 0: inside StarPO-S's clip-higher 0.28, outside 0.2 (clip low and high
    swapped would clip them all)."""
    def at_ratio(batch):
        return dataclasses.replace(batch, old_logprob=batch.old_logprob - np.log(1.25),
                                   advantages=batch.mask.float())

    wide, _, _, _ = _one_update(tiny_model, rows, at_ratio, use_pg_clip_range=True, pg_clip_low=0.2,
                                pg_clip_high=0.28)
    narrow, _, _, _ = _one_update(tiny_model, rows, at_ratio, use_pg_clip_range=True, pg_clip_low=0.28,
                                  pg_clip_high=0.2)
    assert wide["loss/clipfrac"] == 0.0 and narrow["loss/clipfrac"] == pytest.approx(1.0)


@pytest.mark.parametrize("coef", [1.0, -1.0])
def test_the_entropy_term_moves_the_entropy_its_way(tiny_model, rows, coef):
    """No advantage, only the entropy term: the policy's entropy on the same rows rises step after step under a
    bonus (coef > 0) and falls under a penalty (coef < 0, entropy minimisation)."""
    def no_advantage(batch):
        return dataclasses.replace(batch, advantages=torch.zeros_like(batch.advantages))

    first, config, models, optimizers = _one_update(tiny_model, rows, no_advantage, entropy_loss_coef=coef,
                                                    learning_rate=1e-2)
    batch = no_advantage(compute_advantages(config, rows, score_samples(config, models, rows, CPU))[0])
    second = ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0))
    assert (second["loss/entropy"] - first["loss/entropy"]) * coef > 0
