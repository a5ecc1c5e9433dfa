"""How far a recorded reply is from what a model's keyed sampling draws: the check that binds a reply that
re-generation found different (:func:`agentgym_bench.leaderboard.regenerate.regenerate_all`) to the named weights.

A reply sampled with keyed draws (:class:`~agentgym_bench.rollout.hf.HFPolicy` with ``keys``) takes, at each of its
tokens, one uniform ``u`` from its row's own generator and inverts the sampling distribution's CDF at ``u x total``
(:meth:`~agentgym_bench.rollout.hf.HFPolicy._pick`). So given the prompt and the tokens before it, each recorded
token either is the one that point falls in, or lies some probability mass away from it. Another machine's logits
differ in their last bits, which moves the CDF's boundaries by far less than a millionth: a token drawn there lies
at most that far from where the point falls here (measured: 4e-8, ``benchmarks/draw_distances.md``). A token chosen
by hand lies, almost always, a visible share of the mass away. :func:`draw_distances` measures it with the logits of
one forward pass over the prompt and the recorded reply (teacher forcing), whose last bits differ from incremental
decoding's by as little.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch  # noqa: TID253 - runs a model: imported only where re-generation runs

from agentgym_bench.rollout.hf import HFPolicy, sampling_logp
from agentgym_bench.rollout.policy import Message, key_seed


def token_distance(logits: torch.Tensor, token: int, u: float, temperature: float, top_p: float) -> float:
    """How far ``token`` lies from the draw of the sampler at uniform ``u`` from ``(V,)`` float ``logits``: at
    temperature > 0, the probability mass between the point ``u x total`` of the sampling CDF and the token's interval
    of it (``(cdf[token - 1], cdf[token]]``; 0 inside it, ``inf`` for a token of probability 0); at temperature 0,
    the gap between the largest logit and the token's (0 for the argmax)."""
    if temperature == 0:
        return float(logits.max() - logits[token])
    logp = sampling_logp(logits[None], temperature, top_p)[0]
    if not math.isfinite(float(logp[token])):
        return math.inf
    cdf = logp.exp().cumsum(dim=-1)
    point = u * float(cdf[-1])
    low, high = (float(cdf[token - 1]) if token > 0 else 0.0), float(cdf[token])
    return max(low - point, point - high, 0.0)


def ends_as_sampled(policy: HFPolicy, reply: Sequence[int]) -> bool:
    """Whether sampling could stop exactly where ``reply`` does: no stop token or stop string before its last token,
    and at its last token a stop token, a completed stop string or the reply budget."""
    stops = set(policy.stop_ids)
    if not reply or len(reply) > policy.max_new_tokens or any(t in stops for t in reply[:-1]):
        return False
    said = [policy._stopped_by_string(torch.tensor([list(reply[:k])]))[0].item() if policy.stop_strings else False
            for k in range(1, len(reply) + 1)]
    if any(said[:-1]):
        return False
    return reply[-1] in stops or said[-1] or len(reply) == policy.max_new_tokens


@torch.no_grad()
def draw_distances(policy: HFPolicy, conversations: Sequence[list[Message]], replies: Sequence[Sequence[int]],
                   keys: Sequence[tuple[int, ...]], envs: Sequence[Any] | None = None) -> list[tuple[float, int]]:
    """For each conversation, its recorded reply's token ids and its key: ``(distance, prompt tokens)``, where the
    distance is the largest :func:`token_distance` over the reply's tokens, each under the uniform the key's
    generator draws for it and the logits of the prompt and the recorded tokens before it; 0 if keyed sampling
    draws exactly this reply. ``inf`` for a reply sampling cannot end so (:func:`ends_as_sampled`), and for a
    non-empty reply to a prompt that gets an empty one (:meth:`~agentgym_bench.rollout.hf.HFPolicy.answers_empty`).
    ``envs``: the tools they offer, as :meth:`~agentgym_bench.rollout.hf.HFPolicy.generate` takes them."""
    out = []
    for prompt, reply, key in zip(policy.prompt_ids(conversations, envs), replies, keys, strict=True):
        if policy.answers_empty(prompt) or not ends_as_sampled(policy, reply):
            out.append((0.0 if policy.answers_empty(prompt) and not reply else math.inf, len(prompt)))
            continue
        ids = torch.tensor([list(prompt) + list(reply[:-1])], device=policy.device)
        last = {policy.logits_argument: len(reply)} if policy.logits_argument else {}
        logits = policy.model(input_ids=ids, attention_mask=torch.ones_like(ids), **last).logits[0, -len(reply):]
        generator = torch.Generator(device=policy.device).manual_seed(key_seed(policy.seed, key))
        distance = 0.0
        for j, token in enumerate(reply):
            step = logits[j:j + 1].float()
            for processor in policy.logits_processors:
                step = processor(torch.tensor([list(reply[:j])], device=policy.device), step)
            u = float(torch.rand(1, generator=generator, device=policy.device)[0])  # one draw a token, as _pick
            distance = max(distance, token_distance(step[0], token, u, policy.temperature, policy.top_p))
        out.append((distance, len(prompt)))
    return out
