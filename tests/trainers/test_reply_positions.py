"""The RL update runs the output head on reply positions only (``trainers.rl.ppo.token_logprobs`` through
``agentgym_bench.rollout.heads.logits_at``): its log-probs, entropies, losses, gradients and metrics equal those of
the full-position computation (head and log-softmax on every position, masked afterwards), kept here as the
reference, up to float round-off. On the default model (GPT-2, width 128, its full vocabulary)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import trainers.rl.ppo
from tests.trainers.conftest import TINY_ENV_KWARGS, tiny_config_dict
from trainers.algos.losses import entropy_from_logits, logprobs_from_logits
from trainers.rl.config import config_from_dict
from trainers.rl.models import load_models, make_optimizers
from trainers.rl.ppo import _Mean, compute_advantages, micro_batch_loss, ppo_update, score_samples, token_logprobs
from trainers.rl.samples import trajectory_samples
from trainers.runtime.distributed import Dist

CPU = Dist(0, 1, torch.device("cpu"))


def full_position_logprobs(model, input_ids, attention_mask, temperature, with_entropy, mask, share_prefixes=False):
    """The reference: every row whole (``share_prefixes`` ignored), logits on every position, log-softmax and entropy
    on every position, then the mask."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float() / temperature
    logprob = torch.where(mask, logprobs_from_logits(logits, input_ids[:, 1:]), 0.0)
    entropy = torch.where(mask, entropy_from_logits(logits), 0.0) if with_entropy else None
    return logprob, entropy


@pytest.fixture(scope="module")
def episodes(model_and_tokenizer):
    """Whole-episode rows of a noisy oracle on FrozenLake in the default model's tokens (the untrained model's own
    episodes end after one invalid reply): several replies a row between prompts, rows of different lengths."""
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.scripted import NoisyOraclePolicy

    groups = EnvGroups(["AgentFrozenLake-v0"], [2], 3, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    trajectories = groups.rollout(NoisyOraclePolicy(0.5, seed=0), history=None)
    samples = trajectory_samples(trajectories, model_and_tokenizer[1])
    assert 0 < samples.loss_mask.float().mean() < 0.5 and not samples.attention_mask.all()
    assert int(samples.step_index.max()) == 0 and max(len(t.turns) for t in trajectories) > 1
    return samples


@pytest.fixture()
def config(model_dir):
    """StarPO-S (critic) with a KL loss to the reference, an entropy bonus, the dual clip and temperature 0.7, so
    every term of the actor's loss is on."""
    return config_from_dict(tiny_config_dict(
        model_dir, Path("unused"), "starpo_s", use_kl_loss=True, kl_loss_coef=0.1, entropy_loss_coef=0.01,
        dual_clip_loss=True, temperature=0.7, ppo_mini_batch_size=2, micro_batch_size=1, ppo_epochs=2,
        train_env_manager={"history_length": None}))


def test_log_probs_and_entropies_equal_the_full_position_ones(model_and_tokenizer, episodes):
    model = model_and_tokenizer[0]
    mask = episodes.loss_mask[:, 1:]
    ids, att = episodes.input_ids, episodes.attention_mask
    logprob, entropy = token_logprobs(model, ids, att, 0.7, True, mask)
    want_logprob, want_entropy = full_position_logprobs(model, ids, att, 0.7, True, mask)
    assert logprob.shape == mask.shape and bool((logprob[mask] < 0).all())
    assert bool((logprob[~mask] == 0).all()) and bool((entropy[~mask] == 0).all())
    torch.testing.assert_close(logprob, want_logprob, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(entropy, want_entropy, rtol=1e-5, atol=1e-5)


def _micro_batch(config, episodes, monkeypatch, reference: bool):
    """Scores, one micro-batch's gradients and metrics; the actor moved off the reference (so the KL acts) and the
    old log-probs shifted (so clipping acts)."""
    if reference:
        monkeypatch.setattr(trainers.rl.ppo, "token_logprobs", full_position_logprobs)
    models = load_models(config, CPU)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for param in models.actor_module.parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    scored = score_samples(config, models, episodes, CPU)
    batch, _ = compute_advantages(config, episodes, scored)
    shift = torch.randn(batch.mask.shape, generator=torch.Generator().manual_seed(0)) * 0.3
    batch = dataclasses.replace(batch, old_logprob=batch.old_logprob + shift * batch.mask)
    stats = _Mean()
    micro_batch_loss(config, models, batch, torch.arange(len(batch)), float(batch.mask.sum()), CPU, stats,
                     update_actor=True, sync=True)
    grads = {f"actor.{n}": p.grad.clone() for n, p in models.actor_module.named_parameters()}
    grads |= {f"critic.{n}": p.grad.clone() for n, p in models.critic_module.named_parameters()}
    monkeypatch.undo()
    return scored, grads, stats.result(CPU)


def test_scores_losses_gradients_and_metrics_equal_the_full_position_ones(config, episodes, monkeypatch):
    scored, grads, metrics = _micro_batch(config, episodes, monkeypatch, reference=False)
    want_scored, want_grads, want_metrics = _micro_batch(config, episodes, monkeypatch, reference=True)
    for key in ("old_logprob", "ref_logprob", "values"):
        torch.testing.assert_close(scored[key], want_scored[key], rtol=1e-5, atol=1e-5)
    assert 0 < metrics["loss/clipfrac"] < 1 and metrics["loss/kl"] > 0 and metrics["loss/entropy"] > 0
    assert metrics.keys() == want_metrics.keys()
    for key, value in want_metrics.items():
        assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert grads.keys() == want_grads.keys()
    assert any(float(g.abs().max()) > 0 for n, g in grads.items() if n.startswith("actor."))
    for name, value in want_grads.items():
        torch.testing.assert_close(grads[name], value, rtol=1e-4, atol=1e-6, msg=name)


def test_an_update_moves_the_weights_as_the_full_position_one(config, episodes, monkeypatch):
    """Two epochs of two mini-batches of two micro-batches each, optimiser steps included."""
    episodes = episodes.select(torch.arange(4))
    start = load_models(config, CPU).actor_module.state_dict()
    results = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(trainers.rl.ppo, "token_logprobs", full_position_logprobs)
        models = load_models(config, CPU)
        optimizers, _ = make_optimizers(config, models)
        batch, _ = compute_advantages(config, episodes, score_samples(config, models, episodes, CPU))
        metrics = ppo_update(config, models, optimizers, batch, CPU, np.random.default_rng(0))
        results.append((metrics, models.actor_module.state_dict()))
        monkeypatch.undo()
    (metrics, weights), (want_metrics, want_weights) = results
    for key, value in want_metrics.items():
        assert metrics[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    assert any(not torch.equal(value, start[name]) for name, value in weights.items())
    for name, value in want_weights.items():  # the weights move ~4e-3 (4 Adam steps of lr 1e-3); Adam divides by
        # the gradient's own scale, so last-bit differences of the sums can shift a weight by ~1e-6
        torch.testing.assert_close(weights[name], value, rtol=1e-5, atol=1e-5, msg=name)


def test_clip_ratio_c_is_verls_dual_clip_and_replaces_rolls_bound(config, episodes, monkeypatch):
    """``dual_clip_loss: true`` bounds at ROLL's 1 + 2 pg_clip (1.4 here); ``clip_ratio_c`` sets verl's constant."""
    rolls = _micro_batch(config, episodes, monkeypatch, reference=False)[2]
    same = dataclasses.replace(config, dual_clip_loss=False, clip_ratio_c=1.4)
    assert same.dual_clip_bound == config.dual_clip_bound == pytest.approx(1.4)
    assert _micro_batch(same, episodes, monkeypatch, reference=False)[2] == pytest.approx(rolls)
    tighter = _micro_batch(dataclasses.replace(config, clip_ratio_c=1.05), episodes, monkeypatch, reference=False)[2]
    assert tighter["loss/clipfrac_lower"] > rolls["loss/clipfrac_lower"] > 0
