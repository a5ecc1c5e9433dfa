"""The reserved KV cache (issue 60, D1): decoding writes each step's keys and values into buffers reserved once
after the prefill (``hf.reserve``) instead of growing the cache and the mask by ``torch.cat``. The leaderboard
re-generates every reply token for token, so the reserved path must give bit-identical logits to the plain
``DynamicCache`` path (``HFPolicy.reserve_cache = False``): checked forward by forward with ``torch.equal``, on the
published checkpoint (rows that stop at different steps, shared prefill) and on a Llama model."""

from __future__ import annotations

import pytest
import torch

from agentgym_bench.rollout.hf import HFPolicy, load_model, reserve, reserved_layer
from tests.rollout.test_hf_prefill_sharing import PUBLISHED, conversation, repeated_batch


@pytest.fixture(scope="module")
def published():
    return load_model(PUBLISHED)


def mixed_batch():
    """18 rows: :func:`repeated_batch` (13 rows, 4 distinct prompts), 3 rows of one Bandit prompt (shorter replies)
    and two more prompts of their own: 7 distinct prompts, so 7 rows in the shared prefill."""
    return repeated_batch() + [conversation("AgentBandit-v0", 3)] * 3 + [
        conversation("AgentSokobanLarge-v0", 4), conversation("AgentFrozenLakeNoSlip-v0", 4, turns=1)]


def run(model, tokenizer, convs, *, reserved, extra_stops=(), **kwargs):
    """The replies, every forward pass's logits, and per forward the batch size and the cache layer's type."""
    logits, passes = [], []

    def record(_module, _args, kw, out):
        cache = kw.get("cache", kw.get("past_key_values"))
        passes.append((kw["input_ids"].shape[0], type(cache.layers[0]).__name__ if cache is not None else None))
        logits.append(out.logits.detach().clone())

    hook = model.register_forward_hook(record, with_kwargs=True)
    try:
        policy = HFPolicy(model, tokenizer, **kwargs)
        policy.reserve_cache = reserved
        policy.stop_ids = sorted(set(policy.stop_ids) | set(extra_stops))
        keys = [(9, i) for i in range(len(convs))]
        return policy.generate(convs, keys=keys if kwargs.get("temperature", 1) else None), logits, passes
    finally:
        hook.remove()


def assert_identical(model, tokenizer, convs, **kwargs):
    """The reserved and the plain path: equal logits at every forward, equal tokens, log-probs and lengths."""
    (new, new_logits, new_passes), (old, old_logits, old_passes) = (
        run(model, tokenizer, convs, reserved=reserved, **kwargs) for reserved in (True, False))
    assert [size for size, _ in new_passes] == [size for size, _ in old_passes]
    assert {kind for _, kind in new_passes[1:]} == {"ReservedLayer"}  # every decode step read the reserved cache
    assert {kind for _, kind in old_passes[1:]} == {"DynamicLayer"}
    assert len(new_logits) == len(old_logits)
    for step, (a, b) in enumerate(zip(new_logits, old_logits, strict=True)):
        assert torch.equal(a, b), f"forward {step}: max |logit difference| {(a - b).abs().max().item()}"
    assert [(g.text, g.token_ids, g.logprobs) for g in new] == [(g.text, g.token_ids, g.logprobs) for g in old]
    return new, [size for size, _ in new_passes]


@pytest.mark.parametrize("kwargs", [{"seed": 3, "temperature": 2.0}, {"temperature": 0},
                                    {"seed": 3, "temperature": 2.0, "share_prefill": False}])
def test_the_published_checkpoint_decodes_bit_identically_with_the_reserved_cache(published, kwargs):
    """Keyed sampling (at temperature 2 the replies run from 6 tokens to the budget, so rows leave at several
    steps), greedy (6 and 8 tokens), and without shared prefill."""
    model, tokenizer = published
    replies, sizes = assert_identical(model, tokenizer, mixed_batch(), max_new_tokens=16, **kwargs)
    assert sizes[0] == (18 if kwargs.get("share_prefill") is False else 7)
    assert sizes[1] == 18 and len(set(sizes[1:])) > 1  # every row decodes, and rows leave as they finish
    assert len({len(g.token_ids) for g in replies}) >= (4 if kwargs.get("temperature") else 2)


def test_shared_generator_top_logprobs_and_stop_strings_are_unchanged(published):
    model, tokenizer = published
    assert_identical(model, tokenizer, mixed_batch(), max_new_tokens=12, temperature=2.0, top_logprobs=2, top_p=0.9)
    assert_identical(model, tokenizer, mixed_batch(), max_new_tokens=12, stop_strings=[" || "])


def test_a_llama_model_decodes_bit_identically_with_the_reserved_cache(model_and_tokenizer):
    """The default model's Llama form (rotary positions), untrained: a tenth of the vocabulary made stop tokens so
    that rows finish at different steps, the prompts repeated so that prefill is shared."""
    from trainers.sft.default_model import ModelSize, build_model

    tokenizer = model_and_tokenizer[1]
    model = build_model(len(tokenizer), pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id,
                        size=ModelSize(architecture="llama")).eval()
    replies, sizes = assert_identical(model, tokenizer, repeated_batch(), max_new_tokens=20, seed=1,
                                      extra_stops=range(10, 10 + len(tokenizer) // 10))
    assert sizes[0] == 4 and len(set(sizes[1:])) > 1
    assert len({len(g.token_ids) for g in replies}) > 1


def test_the_reserved_layer_grows_selects_repeated_rows_and_crops():
    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer

    generator = torch.Generator().manual_seed(0)
    states = [torch.randn(3, 2, 5, 4, generator=generator) for _ in range(6)]
    cache = DynamicCache()
    cache.update(states[0], states[1], 0)
    sliding = DynamicCache()
    sliding.layers.append(DynamicSlidingWindowLayer(sliding_window=4))
    sliding.update(states[0], states[1], 0)
    assert type(reserve(sliding, 6).layers[0]) is DynamicSlidingWindowLayer  # other kinds of layer are left alone
    reserve(cache, 6)
    layer = cache.layers[0]
    assert type(layer) is reserved_layer()
    assert layer.key_buffer.shape == (3, 2, 6, 4) and cache.get_seq_length() == 5
    keys, values = cache.update(states[2], states[3], 0)  # 10 positions: past the 6 reserved, the buffers grow
    assert torch.equal(keys, torch.cat([states[0], states[2]], -2))
    assert torch.equal(values, torch.cat([states[1], states[3]], -2))
    assert cache.get_seq_length() == 10 and cache.get_mask_sizes(1, 0) == (11, 0)
    rows = torch.tensor([2, 0, 0])
    cache.batch_select_indices(rows)
    keys, _ = cache.update(states[4][:, :, :1], states[5][:, :, :1], 0)
    assert torch.equal(keys, torch.cat([states[0][rows], states[2][rows], states[4][:, :, :1]], -2))
    cache.crop(-3)
    assert cache.get_seq_length() == 8 and torch.equal(layer.keys, keys[:, :, :8])
