"""How far a recorded reply lies from the keyed sampler's draws (agentgym_bench/rollout/draws.py): 0 for the model's
own replies, a visible share of the probability mass for a token chosen by hand, infinite for a reply that sampling
cannot end where it ends."""

from __future__ import annotations

import math

import pytest
import torch

from agentgym_bench.rollout.draws import draw_distances, ends_as_sampled, token_distance
from agentgym_bench.rollout.hf import HFPolicy, decode_reply

CONVERSATIONS = [[{"role": "user", "content": text}] for text in
                 ("push the box Up", "Left Left Down", "go to the goal", "which arm, Phoenix or Dragon")]
KEYS = [(0, 1, 0), (0, 2, 0), (1, 7, 3), (2, 5, 1)]


def test_a_token_is_as_far_as_the_mass_between_it_and_the_point_the_uniform_falls_on():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.2]))  # CDF 0.5, 0.8, 1.0
    assert token_distance(logits, 1, 0.6, 1.0, 1.0) == 0.0  # 0.6 falls in token 1's (0.5, 0.8]
    assert token_distance(logits, 0, 0.6, 1.0, 1.0) == pytest.approx(0.1)
    assert token_distance(logits, 2, 0.6, 1.0, 1.0) == pytest.approx(0.2)
    assert token_distance(logits, 0, 0.5 + 3e-7, 1.0, 1.0) == pytest.approx(3e-7, abs=1e-7)  # a boundary's last bits
    assert token_distance(logits, 2, 0.1, 1.0, 0.4) == math.inf  # top_p 0.4 keeps token 0 alone
    assert token_distance(logits, 0, 0.99, 1.0, 0.4) == 0.0
    assert token_distance(logits, 2, 0.6, 0.0, 1.0) == pytest.approx(math.log(0.5 / 0.2))  # greedy: the logit gap


@pytest.fixture(scope="module")
def policy(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    return HFPolicy(model, tokenizer, max_new_tokens=12, seed=5, overlong="empty")


def test_the_models_own_keyed_replies_are_its_draws_and_changed_ones_are_not(policy):
    replies = [g.token_ids for g in policy.generate(CONVERSATIONS, keys=KEYS)]
    assert all(d <= 1e-6 for d, _ in draw_distances(policy, CONVERSATIONS, replies, KEYS))
    assert draw_distances(policy, CONVERSATIONS[:1], replies[:1], KEYS[1:2])[0][0] > 1e-2  # another key's reply
    changed = [list(r) for r in replies]
    for r in changed:
        r[0] = (r[0] + 1) % policy.model.config.vocab_size
    assert all(d > 1e-4 for d, _ in draw_distances(policy, CONVERSATIONS, changed, KEYS))


def test_a_reply_sampling_cannot_end_where_it_ends_is_infinitely_far(policy):
    reply = next(g.token_ids for g in policy.generate(CONVERSATIONS, keys=KEYS) if len(g.token_ids) > 2)
    stop = policy.stop_ids[0]
    ended = reply if reply[-1] == stop else [*reply[:-1], stop]
    assert ends_as_sampled(policy, reply) and ends_as_sampled(policy, ended)
    for wrong in ([*ended[:-1]] if ended is reply else [*reply[:-2]], [*ended, ended[0]], [stop, *ended], []):
        assert not ends_as_sampled(policy, wrong)
        assert draw_distances(policy, CONVERSATIONS[:1], [wrong], KEYS[:1])[0][0] == math.inf


def test_a_prompt_too_long_for_the_model_is_answered_empty(policy):
    long = [[{"role": "user", "content": " ".join(["Up"] * (policy.max_positions + 5))}]]
    distance, prompt = draw_distances(policy, long, [[]], KEYS[:1])[0]
    assert distance == 0.0 and prompt > policy.max_positions
    assert draw_distances(policy, long, [[policy.stop_ids[0]]], KEYS[:1])[0][0] == math.inf
    assert decode_reply(policy.tokenizer, set(policy.stop_ids), []) == ""
