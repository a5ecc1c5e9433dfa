"""Prefill sharing (issue 60): rows of a batch with the same prompt run the prompt through the model once and copy
its KV cache and logits to each row; every row then samples on its own. With the published checkpoint (replies
that stop at different lengths, so rows leave the batch), sharing gives the replies of prefilling every row."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import agentgym_bench  # noqa: F401 - registers the ids
from agentgym_bench.rollout.hf import HFPolicy, expandable, load_model

PUBLISHED = Path(__file__).resolve().parents[2] / "leaderboards" / "agentgym-v2" / "models" / "default-model-sft"


@pytest.fixture(scope="module")
def published():
    return load_model(PUBLISHED)


def conversation(env_id, seed, turns=0):
    """A compact first prompt of ``env_id`` (``turns`` earlier turns make it longer)."""
    env = gym.make(env_id, prompt="compact")
    obs, info = env.reset(seed=seed)
    conv = [{"role": "system", "content": info["system_prompt"]}] if info.get("system_prompt") else []
    conv.append({"role": "user", "content": obs})
    for _ in range(turns):
        conv += [{"role": "assistant", "content": "<think></think><answer>Left</answer>"},
                 {"role": "user", "content": obs}]
    return conv


def repeated_batch():
    """13 rows: 3 distinct prompts of different lengths, 4 rows each and interleaved, and one prompt of its own."""
    distinct = [conversation("AgentFrozenLake-v0", 10000), conversation("AgentSokoban-v0", 10000),
                conversation("AgentFrozenLake-v0", 10001, turns=2)]
    convs = [distinct[i % 3] for i in range(12)]
    convs.insert(5, conversation("AgentSokoban-v0", 10007))
    return convs


def generate(model, tokenizer, convs, *, share, **kwargs):
    """The replies, and the batch size of each forward pass (the first is the prefill)."""
    sizes = []
    hook = model.register_forward_pre_hook(lambda _m, _a, kw: sizes.append(kw["input_ids"].shape[0]),
                                           with_kwargs=True)
    try:
        policy = HFPolicy(model, tokenizer, share_prefill=share, **kwargs)
        return policy.generate(convs, keys=[(5, i) for i in range(len(convs))]), sizes
    finally:
        hook.remove()


def test_keyed_sampling_gives_the_same_replies_with_one_prefill_per_distinct_prompt(published):
    model, tokenizer = published
    convs = repeated_batch()
    (shared, shared_sizes), (every, every_sizes) = (
        generate(model, tokenizer, convs, share=share, max_new_tokens=16, seed=3) for share in (True, False))
    assert shared_sizes[0] == 4 and every_sizes[0] == 13  # the prefill: 3 repeated prompts + 1 of its own, or all
    assert shared_sizes[1:] == every_sizes[1:] and shared_sizes[1] == 13  # each row decodes
    assert len(set(every_sizes)) > 1  # rows left the batch as they finished
    for a, b in zip(shared, every, strict=True):
        assert (a.text, a.token_ids, a.prompt_tokens) == (b.text, b.token_ids, b.prompt_tokens)
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    assert len({tuple(g.token_ids) for g in shared}) > 4  # more replies than prompts: rows sample on their own


def test_all_distinct_prompts_skip_sharing_and_give_the_same_greedy_replies(published):
    model, tokenizer = published
    convs = [conversation(env, seed) for env in ("AgentFrozenLake-v0", "AgentSokoban-v0") for seed in (1, 2, 3)]
    (shared, shared_sizes), (every, every_sizes) = (
        generate(model, tokenizer, convs, share=share, max_new_tokens=12, temperature=0) for share in (True, False))
    assert shared_sizes == every_sizes and shared_sizes[0] == 6
    assert [(g.token_ids, g.logprobs) for g in shared] == [(g.token_ids, g.logprobs) for g in every]  # same path


@pytest.mark.parametrize("kwargs", [{"top_logprobs": 2}, {"stop_strings": [" || "]}])
def test_top_logprobs_and_stop_strings_are_unchanged_by_sharing(published, kwargs):
    model, tokenizer = published
    convs = repeated_batch()
    (shared, sizes), (every, _) = (generate(model, tokenizer, convs, share=share, max_new_tokens=12, seed=3, **kwargs)
                                   for share in (True, False))
    assert sizes[0] == 4
    assert [(g.text, g.token_ids) for g in shared] == [(g.text, g.token_ids) for g in every]
    if "top_logprobs" in kwargs:
        for a, b in zip(shared, every, strict=True):
            assert [[i for i, _ in top] for top in a.top_logprobs] == [[i for i, _ in top] for top in b.top_logprobs]
            assert [lp for top in a.top_logprobs for _, lp in top] == pytest.approx(
                [lp for top in b.top_logprobs for _, lp in top], abs=1e-5)
    else:
        cut = [g.text.endswith(" || ") for g in shared]  # cut at the stop string, or ended by a stop token
        assert any(cut) and not all(cut)


def test_the_default_model_s_cache_expands_and_the_flag_is_checked(published):
    model, tokenizer = published
    out = model(**tokenizer(["Up"], return_tensors="pt"), use_cache=True)
    assert expandable(out.cache if hasattr(out, "cache") else out.past_key_values)
    assert not expandable(None)
    with pytest.raises(ValueError, match="share_prefill"):
        HFPolicy(model, tokenizer, share_prefill="no")
