"""Hand-checked values for trainers.algos.masked."""

import math

import pytest
import torch

from trainers.algos.masked import explained_variance, masked_mean, masked_var, masked_whiten

F64 = torch.float64
VALUES = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=F64)
MASK = torch.tensor([[1, 1, 0], [0, 1, 0]], dtype=torch.bool)  # masked-in values: 1, 2, 5


def test_masked_mean_hand_values():
    assert masked_mean(VALUES, MASK).item() == pytest.approx(8 / 3)  # (1 + 2 + 5) / 3
    torch.testing.assert_close(masked_mean(VALUES, MASK, dim=-1), torch.tensor([1.5, 5.0], dtype=F64))
    # 0/1 float masks work like bool masks
    assert masked_mean(VALUES, MASK.double()).item() == pytest.approx(8 / 3)


def test_masked_mean_ignores_nan_padding_and_empty_mask_is_zero():
    values = VALUES.clone()
    values[0, 2] = float("nan")
    values[1, 0] = float("-inf")
    assert masked_mean(values, MASK).item() == pytest.approx(8 / 3)
    empty = torch.zeros_like(MASK)
    assert masked_mean(values, empty).item() == 0.0
    torch.testing.assert_close(
        masked_mean(VALUES, torch.tensor([[1, 0, 0], [0, 0, 0]]), dim=1), torch.tensor([1.0, 0.0], dtype=F64)
    )


def test_masked_var_hand_values():
    # deviations from 8/3: -5/3, -2/3, 7/3 -> squares sum 78/9
    assert masked_var(VALUES, MASK).item() == pytest.approx(78 / 9 / 2)  # unbiased: / (n - 1)
    assert masked_var(VALUES, MASK, unbiased=False).item() == pytest.approx(78 / 9 / 3)
    one = torch.tensor([[0, 1, 0], [0, 0, 0]], dtype=torch.bool)
    assert masked_var(VALUES, one).item() == 0.0
    assert masked_var(VALUES, torch.zeros_like(MASK)).item() == 0.0


def test_masked_whiten_hand_values():
    std = math.sqrt(13 / 3)
    out = masked_whiten(VALUES, MASK, eps=0.0)
    expected = torch.tensor([[(1 - 8 / 3) / std, (2 - 8 / 3) / std, 0.0], [0.0, (5 - 8 / 3) / std, 0.0]], dtype=F64)
    torch.testing.assert_close(out, expected)
    kept_mean = masked_whiten(VALUES, MASK, shift_mean=False, eps=0.0)
    torch.testing.assert_close(kept_mean, torch.where(MASK, expected + 8 / 3, torch.zeros_like(expected)))
    # whitened values have masked mean 0 and unbiased variance 1
    assert masked_mean(out, MASK).item() == pytest.approx(0.0, abs=1e-12)
    assert masked_var(out, MASK).item() == pytest.approx(1.0)


def test_masked_whiten_single_token_is_zero_not_nan():
    one = torch.tensor([[0, 1, 0], [0, 0, 0]], dtype=torch.bool)
    out = masked_whiten(VALUES, one)
    assert torch.equal(out, torch.zeros_like(out))


def test_explained_variance_hand_values():
    returns = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=F64)
    mask = torch.ones_like(returns, dtype=torch.bool)
    assert explained_variance(returns, returns, mask).item() == pytest.approx(1.0)
    assert explained_variance(torch.zeros_like(returns), returns, mask).item() == pytest.approx(0.0)
    # residual [0, 0, 0, -1]: unbiased var 0.25; Var[returns] = 5/3 -> 1 - 0.15
    values = torch.tensor([[1.0, 2.0, 3.0, 5.0]], dtype=F64)
    assert explained_variance(values, returns, mask).item() == pytest.approx(0.85)
    assert math.isnan(explained_variance(values, torch.ones_like(returns), mask).item())


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="mask"):
        masked_mean(VALUES, MASK[:, :2])
