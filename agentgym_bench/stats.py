"""Statistics of evaluation results: pure functions over per-episode outcomes.

One data contract (as rliable's score matrix, Agarwal et al. 2021, "Deep RL at the edge of the statistical
precipice"): an entry's outcomes are a 1-D array with one value per episode (success as 0/1, or the episode return),
episodes in seed order; a suite's outcomes are a mapping from entry name to such an array. Every interval is 95% by
default, and every random draw comes from a ``numpy.random.Generator`` built from an explicit ``seed``, so the same
inputs always give the same numbers.

One choice per quantity, used everywhere in the package (benchmark tables, leaderboard, self-play, trainers, warm
start); the module imports nothing of the package, so it sits at the package's top and every layer may import it:

- a success rate: the Wilson score interval (:func:`wilson_interval`), which stays inside [0, 1] and behaves at rates
  near 0 or 1 where the normal (Wald) interval does not;
- a mean return: the normal interval of the mean, ``mean ± z·s/√n`` (:func:`mean_interval`); a mean over a few
  training seeds: Student's t instead of z (:func:`t_interval`);
- a suite aggregate (mean over entries of oracle-normalised success): a stratified bootstrap that resamples episodes
  within each entry (:func:`aggregate_interval`);
- two results on the same seeds: the paired difference with a paired bootstrap interval and McNemar's exact test
  (:func:`paired_difference`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_REPS = 10_000


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if confidence == 0.95:
        return Z95

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a success rate ``successes / n``; ``(0, 1)`` when ``n == 0``."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = _z(confidence)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the normal interval of the mean with the sample standard deviation (ddof 1).

    One value gives a zero-width interval at the value; no values is an error.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or not len(x):
        raise ValueError("mean_interval needs a non-empty 1-D sequence")
    mean = float(x.mean())
    half = _z(confidence) * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else 0.0
    return mean, mean - half, mean + half


T_95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Two-sided 95% quantiles of Student's t for 1..10 degrees of freedom; beyond, 1.96 + 2.5 / df (within 0.01)."""


def t_interval(values: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)``: the two-sided 95% Student's t interval of the mean of ``(k,)`` values, k >= 2 (a few
    training seeds, where the normal interval of :func:`mean_interval` would be too narrow)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or len(x) < 2:
        raise ValueError(f"a t interval needs at least two values, got {x.shape}")
    df = len(x) - 1
    q = T_95[df - 1] if df <= len(T_95) else 1.96 + 2.5 / df
    half = q * float(x.std(ddof=1)) / math.sqrt(len(x))
    return float(x.mean()), float(x.mean()) - half, float(x.mean()) + half


@dataclass(frozen=True)
class Rate:
    """A success rate with its Wilson interval."""

    successes: int
    n: int
    rate: float
    low: float
    high: float

    def __str__(self) -> str:
        """``rate [low, high]`` to three decimals, as the results tables print it."""
        return f"{self.rate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def success_rate(outcomes: Sequence[bool] | np.ndarray, confidence: float = 0.95) -> Rate:
    """The success rate of ``outcomes`` (one bool per episode) with its Wilson interval."""
    x = np.asarray(outcomes, dtype=bool)
    k, n = int(x.sum()), len(x)
    low, high = wilson_interval(k, n, confidence)
    return Rate(k, n, k / n if n else float("nan"), low, high)


def normalised_mean(outcomes: Mapping[str, np.ndarray], ceilings: Mapping[str, float]) -> Any:
    """Mean over entries of ``mean(outcomes[e]) / ceilings[e]`` (the oracle-normalised score of a suite).

    Args:
        outcomes: entry name -> ``(..., n_e)`` per-episode values (success as 0/1), episodes on the last axis.
        ceilings: entry name -> the oracle's rate on the same episodes (> 0).

    Returns:
        ``(...)``: a float for 1-D outcomes.
    """
    if not outcomes:
        raise ValueError("no entries")
    value = sum(np.asarray(v).mean(axis=-1) / ceilings[k] for k, v in outcomes.items()) / len(outcomes)
    return float(value) if np.ndim(value) == 0 else value


def stratified_bootstrap(outcomes: Mapping[str, np.ndarray], statistic: Callable[[Mapping[str, np.ndarray]], float],
                         *, reps: int = BOOTSTRAP_REPS, seed: int = 0, confidence: float = 0.95
                         ) -> tuple[float, float, float]:
    """``(point, low, high)`` of ``statistic`` with a percentile interval from a stratified bootstrap.

    Each replicate resamples, with replacement, ``n_e`` episodes within every entry ``e`` (the strata); the draws
    come from ``numpy.random.default_rng(seed)``, all replicates of one entry at once, entries in the order of
    ``outcomes``.

    Args:
        outcomes: entry name -> ``(n_e,)`` per-episode values.
        statistic: maps entry name -> ``(..., n_e)`` arrays to ``(...)`` values (episodes on the last axis, any
            leading axes kept): a number for ``outcomes`` itself, and ``(reps,)`` values for all replicates at once
            (entry name -> ``(reps, n_e)``). E.g. :func:`normalised_mean` with the ceilings bound.
    """
    _z(confidence)
    rng = np.random.default_rng(seed)
    arrays = {k: np.asarray(v, dtype=float) for k, v in outcomes.items()}
    if any(not len(v) for v in arrays.values()):
        raise ValueError("every entry needs at least one episode")
    draws = {k: v[rng.integers(0, len(v), (reps, len(v)))] for k, v in arrays.items()}  # (reps, n_e) each
    samples = np.asarray(statistic(draws), dtype=float)
    if samples.shape != (reps,):
        raise ValueError(f"statistic must map (reps, n_e) arrays to shape ({reps},), gave {samples.shape}")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(samples, [alpha, 1 - alpha])
    return float(statistic(arrays)), float(low), float(high)


def aggregate_interval(outcomes: Mapping[str, np.ndarray], ceilings: Mapping[str, float], *,
                       reps: int = BOOTSTRAP_REPS, seed: int = 0) -> tuple[float, float, float]:
    """``(score, low, high)``: the suite's oracle-normalised success (:func:`normalised_mean`) with its stratified
    bootstrap interval (:func:`stratified_bootstrap`)."""
    return stratified_bootstrap(outcomes, lambda o: normalised_mean(o, ceilings), reps=reps, seed=seed)


@dataclass(frozen=True)
class PairedComparison:
    """``b - a`` on the same episodes.

    Attributes:
        n: paired episodes.
        mean_a / mean_b: the two means.
        difference: ``mean_b - mean_a``.
        low / high: its paired bootstrap interval.
        only_a / only_b: episodes where only ``a`` (only ``b``) succeeded (binary outcomes; else 0).
        p_value: two-sided McNemar exact test for binary outcomes (``nan`` otherwise): the probability, if neither
            is better, of a split of the discordant episodes at least this lopsided.
    """

    n: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    only_a: int
    only_b: int
    p_value: float

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.low > 0 or self.high < 0


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: ``min(1, 2 P(X <= min(only_a, only_b)))``, ``X ~ Binomial(only_a+only_b,
    1/2)``; 1 when there are no discordant pairs."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                      reps: int = BOOTSTRAP_REPS, seed: int = 0, confidence: float = 0.95) -> PairedComparison:
    """Compare ``b`` with ``a``, two ``(n,)`` arrays of per-episode outcomes on the same episodes (same order).

    The interval resamples episode indices (pairs stay together) ``reps`` times with
    ``numpy.random.default_rng(seed)``; for 0/1 outcomes the test is McNemar's exact test.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or not len(x):
        raise ValueError(f"paired outcomes need two non-empty 1-D arrays of one length, got {x.shape} and {y.shape}")
    _z(confidence)
    d = y - x
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), (reps, len(d)))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    binary = bool(np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all())
    only_a, only_b = (int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())) if binary else (0, 0)
    return PairedComparison(len(d), float(x.mean()), float(y.mean()), float(d.mean()), float(low), float(high),
                            only_a, only_b, mcnemar_exact(only_a, only_b) if binary else float("nan"))


def most_successes(ceiling: float, n: int, p_value: float = 1e-6) -> int:
    """The most successes chance allows in ``n`` independent episodes whose success probabilities average at most
    ``ceiling``: the largest ``k`` whose Chernoff-Hoeffding bound ``exp(-n KL(k/n || ceiling))`` (Hoeffding 1963,
    Theorem 1: any independent outcomes in [0, 1] with that mean) is at least ``p_value``. ``n`` if ``ceiling`` is 1.
    More than ``k`` successes has a chance below ``p_value`` for every such policy."""
    if not 0 <= ceiling <= 1 or n < 0 or not 0 < p_value < 1:
        raise ValueError(f"most_successes needs a ceiling in [0, 1], n >= 0 and p_value in (0, 1), got {ceiling}, "
                         f"{n}, {p_value}")
    budget = -math.log(p_value)
    k = max(0, math.ceil(n * ceiling))
    while k < n and n * _bernoulli_kl((k + 1) / n, ceiling) <= budget:
        k += 1
    return k


def _bernoulli_kl(q: float, p: float) -> float:
    """KL(Bernoulli(q) || Bernoulli(p)) in nats, for ``q >= p``; infinite where ``p`` cannot reach ``q``."""
    if q <= p:
        return 0.0
    if p == 0 or p == 1:
        return math.inf
    first = q * math.log(q / p)
    return first + ((1 - q) * math.log((1 - q) / (1 - p)) if q < 1 else 0.0)
