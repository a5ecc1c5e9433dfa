"""Statistics over masked token tensors.

A mask is a bool (or 0/1) tensor of the same shape as the values; ``True``/1 marks the positions that count
(assistant tokens, for the trainers). Values at masked-out positions never reach a result, not even as ``NaN``
(``torch.where`` is used, not multiplication), so padding may hold anything finite or not.

These are verl's ``verl_F.masked_mean / masked_var / masked_whiten`` without the host-side checks: an empty mask
gives 0 instead of raising, so nothing here forces a device sync.
"""

import torch  # noqa: TID253 - trainers/ runs on torch

__all__ = ["masked_mean", "masked_var", "masked_whiten", "explained_variance"]


def _as_bool(mask: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    if mask.shape != values.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)} but values have shape {tuple(values.shape)}")
    return mask.bool()


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``values`` over the positions where ``mask`` is set.

    Args:
        values: (B, T) or any shape.
        mask: same shape as ``values``; bool or 0/1.
        dim: reduce over this dim only (e.g. ``-1`` for a per-sequence mean), or over everything if None.

    Returns:
        0-dim tensor (``dim=None``) or ``values`` reduced over ``dim``. A slice with no masked-in position gives 0.
    """
    m = _as_bool(mask, values)
    total = torch.where(m, values, torch.zeros_like(values))
    if dim is None:
        return total.sum() / m.sum().clamp(min=1)
    return total.sum(dim) / m.sum(dim).clamp(min=1)


def masked_var(values: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of ``values`` over all masked-in positions.

    Args:
        values: (B, T) or any shape.
        mask: same shape as ``values``.
        unbiased: Bessel's correction (divide by n - 1), as verl and ``torch.var``.

    Returns:
        0-dim tensor. With fewer than two masked-in positions the (unbiased) variance is 0, not NaN.
    """
    m = _as_bool(mask, values)
    mean = masked_mean(values, m)
    sq = torch.where(m, (values - mean) ** 2, torch.zeros_like(values)).sum()
    n = m.sum()
    return sq / ((n - 1) if unbiased else n).clamp(min=1)


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, eps: float = 1e-8
) -> torch.Tensor:
    """Whiten ``values`` with the masked mean and (unbiased) variance; this is advantage whitening.

    ``(values - mean) / sqrt(var + eps)``, plus ``mean`` again if ``shift_mean`` is False (verl ``masked_whiten``).
    Used for the ``whiten_advantages`` option (ROLL) and after GAE (RAGEN, verl).

    Args:
        values: (B, T).
        mask: (B, T).
        shift_mean: keep the result centred at 0 (True) or restore the original mean (False).
        eps: added to the variance.

    Returns:
        (B, T), 0 at masked-out positions. A single masked-in position whitens to 0 (or to itself when
        ``shift_mean`` is False): its variance is taken as 0 (ROLL instead skips whitening, issue #476).
    """
    m = _as_bool(mask, values)
    mean = masked_mean(values, m)
    var = masked_var(values, m)
    whitened = (values - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return torch.where(m, whitened, torch.zeros_like(whitened))


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Fraction of the variance of the returns that the critic explains: ``1 - Var[returns - values] / Var[returns]``.

    1 is a perfect critic, 0 is no better than a constant, negative is worse (CleanRL / verl ``vf_explained_var``).

    Args:
        values: (B, T) critic predictions.
        returns: (B, T) regression targets.
        mask: (B, T).

    Returns:
        0-dim tensor; NaN when the returns have zero variance (the ratio is undefined), as CleanRL.
    """
    var_y = masked_var(returns, mask)
    ratio = masked_var(returns - values, mask) / torch.where(var_y > 0, var_y, torch.ones_like(var_y))
    return torch.where(var_y > 0, 1 - ratio, torch.full_like(var_y, float("nan")))
