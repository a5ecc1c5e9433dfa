"""Hand-checked values and gradient checks for trainers.algos.losses."""

import math

import pytest
import torch

from trainers.algos.losses import (
    agg_loss,
    approx_kl,
    entropy_from_logits,
    kl_penalty,
    logprobs_from_logits,
    ppo_policy_loss,
    value_loss,
)
from trainers.algos.masked import masked_mean

F64 = torch.float64


def t(*rows):
    return torch.tensor(rows, dtype=F64)


# ---------------------------------------------------------------- agg_loss

LOSS = t([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=torch.bool)  # row 3 empty


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", 7 / 3),  # (1 + 2 + 4) / 3 tokens
        ("seq-mean-token-mean", 2.75),  # rows: 1.5 and 4 -> mean; the empty row is left out
        ("seq-mean-token-sum", 3.5),  # rows: 3 and 4 -> mean
    ],
)
def test_agg_loss_modes(mode, expected):
    assert agg_loss(LOSS, MASK, mode).item() == pytest.approx(expected)
    # the empty row changes nothing, and NaN under the mask does not leak
    loss = LOSS.clone()
    loss[2] = float("nan")
    assert agg_loss(loss[:2], MASK[:2], mode).item() == pytest.approx(expected)
    assert agg_loss(loss, MASK, mode).item() == pytest.approx(expected)


def test_agg_loss_denominator_and_empty():
    assert agg_loss(LOSS, MASK, "token-mean", denominator=7.0).item() == pytest.approx(1.0)
    assert agg_loss(LOSS, MASK, "seq-mean-token-sum", denominator=4).item() == pytest.approx(7 / 4)
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        assert agg_loss(LOSS, torch.zeros_like(MASK), mode).item() == 0.0
    with pytest.raises(ValueError, match="mode"):
        agg_loss(LOSS, MASK, "seq-mean-token-sum-norm")


def test_agg_loss_micro_batches_sum_to_mini_batch():
    gen = torch.Generator().manual_seed(0)
    loss = torch.randn(6, 5, generator=gen, dtype=F64)
    mask = torch.rand(6, 5, generator=gen) > 0.4
    mask[:, 0] = True
    whole = agg_loss(loss, mask, "token-mean")
    parts = sum(agg_loss(loss[i : i + 2], mask[i : i + 2], "token-mean", denominator=mask.sum()) for i in (0, 2, 4))
    assert parts.item() == pytest.approx(whole.item())


# ---------------------------------------------------------------- PPO policy loss

# Each column is one hand-checked token; clip_low 0.2, clip_high 0.28 (clip-higher), clip_ratio_c 3.
#            A     r    unclipped  clipped(-A*clamp(r, .8, 1.28))  -> loss   clipped?  dual bound -A*3 -> final  dual?
CASES = [
    (+1.0, 1.50, -1.50, -1.28, -1.28, True, None, -1.28, False),  # ratio above 1+eps_high, A>0: clipped
    (+1.0, 1.25, -1.25, -1.25, -1.25, False, None, -1.25, False),  # inside clip-higher range (0.2 would clip)
    (+1.0, 0.50, -0.50, -0.80, -0.50, False, None, -0.50, False),  # A>0, low ratio: pessimistic term is unclipped
    (-1.0, 0.50, 0.50, 0.80, 0.80, True, 3.0, 0.80, False),  # A<0, low ratio: clipped
    (-1.0, 2.00, 2.00, 1.28, 2.00, False, 3.0, 2.00, False),  # A<0, ratio 2 < c: dual clip inactive
    (-1.0, 5.00, 5.00, 1.28, 5.00, False, 3.0, 3.00, True),  # A<0, ratio 5 > c: dual clip bounds loss at 3
    (+1.0, 5.00, -5.00, -1.28, -1.28, True, None, -1.28, False),  # A>0: dual clip never applies
    (-2.0, 4.00, 8.00, 2.56, 8.00, False, 6.0, 6.00, True),  # bound -A*c = 6
]


def _policy_inputs():
    adv = t([c[0] for c in CASES])
    ratio = t([c[1] for c in CASES])
    old = torch.zeros_like(ratio)
    logprob = torch.log(ratio).requires_grad_(True)
    return logprob, old, adv


def test_ppo_policy_loss_hand_cases_with_dual_clip():
    logprob, old, adv = _policy_inputs()
    out = ppo_policy_loss(logprob, old, adv, clip_low=0.2, clip_high=0.28, clip_ratio_c=3.0)
    torch.testing.assert_close(out.loss.detach(), t([c[7] for c in CASES]))
    assert out.clipped.tolist() == [[c[5] for c in CASES]]
    assert out.dual_clipped.tolist() == [[c[8] for c in CASES]]
    torch.testing.assert_close(out.ratio.detach(), t([c[1] for c in CASES]))
    # d loss / d logprob = -A * r where the unclipped term is active, 0 where a clip bound is active
    out.loss.sum().backward()
    active = [not (c[5] or c[8]) for c in CASES]
    expected = [-c[0] * c[1] if a else 0.0 for c, a in zip(CASES, active, strict=True)]
    torch.testing.assert_close(logprob.grad, t(expected))


def test_ppo_policy_loss_without_dual_clip_and_symmetric_clip():
    logprob, old, adv = _policy_inputs()
    out = ppo_policy_loss(logprob, old, adv, clip_low=0.2, clip_high=0.28)
    torch.testing.assert_close(out.loss.detach(), t([c[4] for c in CASES]))
    assert not out.dual_clipped.any()
    sym = ppo_policy_loss(logprob, old, adv, clip_low=0.2, clip_high=0.2)
    # token 2 (r = 1.25, A = 1) is clipped at 1.2 with the symmetric range
    assert sym.loss[0, 1].item() == pytest.approx(-1.2)
    assert sym.clipped[0, 1].item()


def test_ppo_policy_loss_clamps_log_ratio_and_validates():
    out = ppo_policy_loss(t([100.0]), t([0.0]), t([-1.0]))
    assert out.ratio.item() == pytest.approx(math.exp(20.0))
    assert math.isfinite(out.loss.item())
    for kwargs in ({"clip_low": 1.0}, {"clip_high": -0.1}, {"clip_ratio_c": 1.0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            ppo_policy_loss(t([0.0]), t([0.0]), t([1.0]), **kwargs)
    with pytest.raises(ValueError, match="same shape"):
        ppo_policy_loss(t([0.0]), t([0.0, 0.0]), t([1.0]))


# ---------------------------------------------------------------- value loss


def test_value_loss_hand_cases():
    # c = 0.5.  v=2, old=1, R=3: v_clip 1.5, errors 1 vs 2.25 -> 0.5*2.25 = 1.125, clipped
    #           v=0, old=1, R=3: v_clip 0.5, errors 9 vs 6.25 -> 4.5, not clipped
    #           v=1, old=1, R=1.2: v_clip 1, errors 0.04 both -> 0.02, not clipped
    #           v=2, old=1, R=0: v_clip 1.5, errors 4 vs 2.25 -> 2.0, not clipped
    values = t([2.0, 0.0, 1.0, 2.0]).requires_grad_(True)
    old, returns = t([1.0, 1.0, 1.0, 1.0]), t([3.0, 3.0, 1.2, 0.0])
    out = value_loss(values, old, returns, cliprange_value=0.5)
    torch.testing.assert_close(out.loss.detach(), t([1.125, 4.5, 0.02, 2.0]))
    assert out.clipped.tolist() == [[True, False, False, False]]
    out.loss.sum().backward()
    # gradient (v - R) where the unclipped error is active, 0 where the clipped (constant) one is
    torch.testing.assert_close(values.grad, t([0.0, -3.0, -0.2, 2.0]))
    plain = value_loss(values.detach(), old, returns)
    torch.testing.assert_close(plain.loss, t([0.5, 4.5, 0.02, 2.0]))
    assert not plain.clipped.any()
    with pytest.raises(ValueError, match="cliprange_value"):
        value_loss(values, old, returns, cliprange_value=0.0)


# ---------------------------------------------------------------- entropy, log-probs


def test_entropy_hand_values_and_reference():
    # p = [1/4, 3/4]: H = 0.25 ln 4 + 0.75 ln(4/3)
    logits = torch.tensor([[[0.0, math.log(3.0)]]], dtype=F64)
    assert entropy_from_logits(logits).item() == pytest.approx(0.25 * math.log(4) + 0.75 * math.log(4 / 3))
    assert entropy_from_logits(torch.zeros(1, 1, 4, dtype=F64)).item() == pytest.approx(math.log(4))
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 5, 7, generator=gen, dtype=F64) * 3
    expected = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(entropy_from_logits(logits), expected)


def test_entropy_stable_with_extreme_and_masked_logits():
    logits = torch.tensor([[[1000.0, 0.0, float("-inf")], [0.0, float("-inf"), float("-inf")]]], requires_grad=True)
    ent = entropy_from_logits(logits)
    assert torch.isfinite(ent).all()
    assert ent[0, 0].item() == pytest.approx(0.0, abs=1e-6)
    assert ent[0, 1].item() == 0.0
    ent.sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_logprobs_from_logits():
    logits = torch.tensor([[[0.0, math.log(3.0)]]], dtype=F64)
    assert logprobs_from_logits(logits, torch.tensor([[1]])).item() == pytest.approx(math.log(0.75))
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 4, 9, generator=gen, dtype=F64)
    tokens = torch.randint(0, 9, (2, 4), generator=gen)
    expected = torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1)
    torch.testing.assert_close(logprobs_from_logits(logits, tokens), expected)
    with pytest.raises(ValueError, match="tokens"):
        logprobs_from_logits(logits, tokens[:, :3])


# ---------------------------------------------------------------- KL


def test_kl_estimators_hand_values():
    # pi = 0.5, ref = 0.25 -> d = ln 2
    logprob, ref = t([math.log(0.5)]), t([math.log(0.25)])
    d = math.log(2)
    assert kl_penalty(logprob, ref, "k1").item() == pytest.approx(d)
    assert kl_penalty(logprob, ref, "k2").item() == pytest.approx(0.5 * d * d)
    assert kl_penalty(logprob, ref, "k3").item() == pytest.approx(0.5 + d - 1)  # exp(-d) + d - 1
    for alias, name in (("kl", "k1"), ("mse", "k2"), ("low_var_kl", "k3")):
        assert kl_penalty(logprob, ref, alias).item() == kl_penalty(logprob, ref, name).item()
    with pytest.raises(ValueError, match="estimator"):
        kl_penalty(logprob, ref, "full")


def test_k3_clamped_like_verl():
    # d = -100: -d clamped to 20 -> exp(20) - 21, clamped to 10; d = 100: exp(-20) + 19 -> clamped to 10
    out = kl_penalty(t([-100.0, 100.0]), t([0.0, 0.0]), "low_var_kl")
    torch.testing.assert_close(out, t([10.0, 10.0]))


def test_k1_and_k3_are_unbiased_estimates_of_kl():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    q = torch.tensor([0.2, 0.5, 0.3], dtype=F64)
    true_kl = (p * (p / q).log()).sum().item()
    gen = torch.Generator().manual_seed(3)
    samples = torch.multinomial(p, 100_000, replacement=True, generator=gen)
    logprob, ref = p.log()[samples][None], q.log()[samples][None]
    for name in ("k1", "k3"):
        assert kl_penalty(logprob, ref, name).mean().item() == pytest.approx(true_kl, abs=0.01)
    assert (kl_penalty(logprob, ref, "k3") >= 0).all()


def test_approx_kl():
    # r = 2 on the masked-in token: (2 - 1) - ln 2; the masked-out token (r = e^5) is ignored
    logprob, old = t([math.log(2.0), 5.0]), t([0.0, 0.0])
    mask = torch.tensor([[True, False]])
    assert approx_kl(logprob, old, mask).item() == pytest.approx(1 - math.log(2))
    assert approx_kl(old, old, mask).item() == 0.0


# ---------------------------------------------------------------- gradients through a whole loss


def test_gradients_flow_through_combined_loss():
    gen = torch.Generator().manual_seed(4)
    b, seq, vocab = 3, 6, 11
    logits = torch.randn(b, seq, vocab, generator=gen, requires_grad=True)
    tokens = torch.randint(0, vocab, (b, seq), generator=gen)
    mask = torch.tensor([[0, 1, 1, 0, 1, 1], [0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    old = (logprobs_from_logits(logits, tokens) + 0.3 * torch.randn(b, seq, generator=gen)).detach()
    ref = (old + 0.1 * torch.randn(b, seq, generator=gen)).detach()
    adv = torch.randn(b, seq, generator=gen)

    logprob = logprobs_from_logits(logits, tokens)
    pg = ppo_policy_loss(logprob, old, adv, clip_low=0.2, clip_high=0.28, clip_ratio_c=3.0)
    loss = (
        agg_loss(pg.loss, mask, "seq-mean-token-mean")
        - 0.001 * agg_loss(entropy_from_logits(logits), mask)
        + 0.01 * agg_loss(kl_penalty(logprob, ref, "k3"), mask)
    )
    loss.backward()
    grad = logits.grad
    assert torch.isfinite(grad).all()
    assert grad[mask].abs().sum() > 0
    assert torch.equal(grad[~mask], torch.zeros_like(grad[~mask]))  # masked-out tokens get no gradient
    assert 0 <= masked_mean(pg.clipped.float(), mask).item() <= 1


def test_adaptive_kl_coef_moves_toward_the_target_by_at_most_20_percent_per_horizon():
    from trainers.algos.losses import adaptive_kl_coef

    assert adaptive_kl_coef(0.1, 0.02, 0.01, 100, 1000) == pytest.approx(0.1 * (1 + 0.2 * 0.1))  # error clipped
    assert adaptive_kl_coef(0.1, 0.009, 0.01, 100, 1000) == pytest.approx(0.1 * (1 - 0.1 * 0.1))
    assert adaptive_kl_coef(0.1, 0.01, 0.01, 100, 1000) == pytest.approx(0.1)
