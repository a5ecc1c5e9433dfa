"""Identical training rows share one forward pass (``trainers.rl.ppo.distinct_rows`` inside ``token_logprobs`` and
``token_values``): the outputs, a loss over every row and its gradient equal the row-by-row computation, and the
model sees only the distinct rows. On the default model (GPT-2, width 128) and a noisy oracle's FrozenLake rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import trainers.rl.ppo
from agentgym_bench.rollout.heads import shared_prefixes
from tests.trainers.conftest import TINY_ENV_KWARGS
from trainers.rl.ppo import distinct_rows, token_logprobs, token_values
from trainers.rl.samples import step_samples


def test_distinct_rows_rebuilds_every_row():
    rows = torch.tensor([[1, 2, 0], [3, 4, 5], [1, 2, 0], [1, 2, 9], [3, 4, 5]])
    mask = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
    first, inverse = distinct_rows(rows, mask)
    assert sorted(first.tolist()) == [0, 1, 3]  # the first of each distinct row
    assert torch.equal(rows[first][inverse], rows) and torch.equal(mask[first][inverse], mask)
    first, _ = distinct_rows(rows, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 0, 0], [1, 1, 0]]))
    assert sorted(first.tolist()) == [0, 1, 2, 3]  # the same tokens under another mask are another row


@pytest.fixture(scope="module")
def rows(model_and_tokenizer):
    """A noisy oracle's FrozenLake rows (one per turn), each distinct row twice or three times, shuffled."""
    from agentgym_bench.rollout.engine import EnvGroups
    from agentgym_bench.rollout.scripted import NoisyOraclePolicy

    groups = EnvGroups(["AgentFrozenLake-v0"], [2], 2, env_kwargs=TINY_ENV_KWARGS, seed=10_000)
    samples = step_samples(groups.rollout(NoisyOraclePolicy(0.5, seed=0), history=0), model_and_tokenizer[1])
    distinct = len(distinct_rows(samples.input_ids, samples.loss_mask)[0])
    assert distinct >= 3
    index = torch.cat([torch.arange(len(samples)), torch.arange(len(samples)), torch.arange(0, len(samples), 2)])
    return samples.select(index[torch.randperm(len(index), generator=torch.Generator().manual_seed(0))]), distinct


class Counting(torch.nn.Module):
    """Passes calls on to ``model``, recording the batch size of each."""

    def __init__(self, model):
        super().__init__()
        self.model, self.sizes = model, []

    def get_output_embeddings(self):
        return self.model.get_output_embeddings()

    def get_base_model(self):
        return self.model

    def forward(self, input_ids, attention_mask, **kwargs):
        self.sizes.append(len(input_ids))
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)


def _loss_and_grads(model, samples, weights, share_prefixes=False):
    """A loss over every row (each row's own weight) from ``token_logprobs``, its outputs and its gradients."""
    model.zero_grad()
    mask = samples.loss_mask[:, 1:]
    logprob, entropy = token_logprobs(model, samples.input_ids, samples.attention_mask, 0.7, True, mask,
                                      share_prefixes)
    ((logprob + 0.1 * entropy) * weights[:, None]).sum().backward()
    return logprob.detach(), entropy.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_shared_forward_equals_row_by_row(model_and_tokenizer, rows, monkeypatch):
    samples, distinct = rows
    model = model_and_tokenizer[0]
    weights = torch.linspace(-1, 1, len(samples))  # duplicates carry different advantages
    counting = Counting(model)
    shared = _loss_and_grads(counting, samples, weights)
    assert counting.sizes == [distinct] and distinct < len(samples)
    monkeypatch.setattr(trainers.rl.ppo, "distinct_rows",
                        lambda *t: (torch.arange(len(t[0])), torch.arange(len(t[0]))))
    counting.sizes = []
    every = _loss_and_grads(counting, samples, weights)
    assert counting.sizes == [len(samples)]
    for got, want in zip(shared[:2], every[:2], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert len(shared[2]) == len(every[2]) > 0
    for got, want in zip(shared[2], every[2], strict=True):  # sums of opposite signs: round-off against the largest
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


def test_shared_prompts_and_rows_equal_row_by_row(model_and_tokenizer, rows, monkeypatch):
    """With ``share_prefixes`` the distinct rows' prompts run once and the rest of each distinct row after them; the
    log-probs, entropies and gradients are still every row's own."""
    samples, distinct = rows
    weights = torch.linspace(-1, 1, len(samples))
    counting = Counting(model_and_tokenizer[0])
    shared = _loss_and_grads(counting, samples, weights, share_prefixes=True)
    prompts = len(shared_prefixes(samples.input_ids, samples.attention_mask, samples.loss_mask[:, 1:])[1])
    assert counting.sizes == [prompts, distinct] and prompts < distinct
    monkeypatch.setattr(trainers.rl.ppo, "distinct_rows",
                        lambda *t: (torch.arange(len(t[0])), torch.arange(len(t[0]))))
    every = _loss_and_grads(counting, samples, weights)
    for got, want in zip(shared[:2], every[:2], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for got, want in zip(shared[2], every[2], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


def test_critic_values_shared_equal_row_by_row(model_and_tokenizer, rows):
    samples, distinct = rows
    model = model_and_tokenizer[0]

    class Critic(torch.nn.Module):  # a value head's shape: (B, L, 1) from the LM's first logit
        def forward(self, input_ids, attention_mask):
            self.sizes = [*getattr(self, "sizes", []), len(input_ids)]
            out = model(input_ids=input_ids, attention_mask=attention_mask)
            out.logits = out.logits[..., :1]
            return out

    critic = Critic()
    with torch.no_grad():
        values = token_values(critic, samples.input_ids, samples.attention_mask)
        want = torch.stack([token_values(critic, samples.input_ids[i:i + 1], samples.attention_mask[i:i + 1])[0]
                            for i in range(len(samples))])
    assert critic.sizes[0] < len(samples)
    torch.testing.assert_close(values, want, rtol=1e-5, atol=1e-5)


def test_mini_batches_keep_rows_with_one_prompt_and_identical_rows_together(rows):
    samples, distinct = rows
    mask = samples.loss_mask[:, 1:]
    batch = trainers.rl.ppo.Batch(samples, mask, None, torch.zeros(mask.shape))
    order = trainers.rl.ppo.shuffled_together(batch, np.random.default_rng(0))
    assert sorted(order.tolist()) == list(range(len(samples)))  # every row once
    _, inverse = distinct_rows(samples.input_ids, samples.attention_mask, samples.loss_mask)
    runs = torch.unique_consecutive(inverse[order])
    assert len(runs) == distinct  # each distinct row's copies in one run
    _, prompts, prompt = shared_prefixes(samples.input_ids, samples.attention_mask, mask)
    assert 1 < len(prompts) < distinct and len(torch.unique_consecutive(prompt[order])) == len(prompts)  # and prompts
    again = trainers.rl.ppo.shuffled_together(batch, np.random.default_rng(0))
    other = trainers.rl.ppo.shuffled_together(batch, np.random.default_rng(1))
    assert torch.equal(order, again) and not torch.equal(order, other)
