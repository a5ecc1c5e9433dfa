import numpy as np
import pytest

from agentgym_bench import stats


def test_wilson_against_hand_computed_values():
    # p = 0.5, n = 100, z = 1.96: centre 0.5, half = z*sqrt(0.0025 + z^2/40000)/(1 + z^2/100) = 0.09617
    assert stats.wilson_interval(50, 100) == pytest.approx((0.40383, 0.59617), abs=1e-5)
    # 0 of 10: upper bound z^2/(n + z^2) = 3.8415/13.8415
    assert stats.wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert stats.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        stats.wilson_interval(11, 10)


def test_success_rate_and_mean_interval():
    r = stats.success_rate([True, False, True, True])
    assert (r.successes, r.n, r.rate) == (3, 4, 0.75)
    assert (r.low, r.high) == stats.wilson_interval(3, 4)
    # mean 2.5, sample sd 1.290994, half = 1.959964 * 1.290994 / 2
    assert stats.mean_interval([1, 2, 3, 4]) == pytest.approx((2.5, 1.234849, 3.765151), abs=1e-6)
    assert stats.mean_interval([7.0]) == (7.0, 7.0, 7.0)
    with pytest.raises(ValueError):
        stats.mean_interval([])


def test_normalised_mean_and_stratified_bootstrap():
    outcomes = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 1.0])}
    ceilings = {"a": 0.5, "b": 1.0}
    assert stats.normalised_mean(outcomes, ceilings) == pytest.approx(1.0)  # mean(0.5/0.5, 1/1)
    # resampling two episodes of "a" gives means 0, .5, 1 w.p. 1/4, 1/2, 1/4: the 95% percentile interval is [0, 1]
    point, low, high = stats.stratified_bootstrap({"a": np.array([0.0, 1.0])}, lambda o: o["a"].mean(axis=-1),
                                                  reps=4000, seed=3)
    assert (point, low, high) == (0.5, 0.0, 1.0)
    # constant strata: no spread
    assert stats.aggregate_interval({"x": np.ones(5), "y": np.zeros(5)}, {"x": 1.0, "y": 0.5}) == (0.5, 0.5, 0.5)
    # same seed, same interval; another seed, another interval
    data = {"x": np.random.default_rng(0).random(10), "y": np.random.default_rng(1).random(5)}
    one = stats.aggregate_interval(data, {"x": 1.0, "y": 1.0}, reps=500, seed=0)
    assert one == stats.aggregate_interval(data, {"x": 1.0, "y": 1.0}, reps=500, seed=0)
    assert one != stats.aggregate_interval(data, {"x": 1.0, "y": 1.0}, reps=500, seed=1)


def test_mcnemar_exact_against_hand_computed_values():
    assert stats.mcnemar_exact(1, 5) == pytest.approx(2 * 7 / 64)  # 2 * P(X <= 1), X ~ Bin(6, 1/2)
    assert stats.mcnemar_exact(0, 3) == pytest.approx(0.25)
    assert stats.mcnemar_exact(2, 2) == 1.0
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_paired_difference():
    a, b = [0, 0, 1, 1], [1, 1, 1, 0]
    c = stats.paired_difference(a, b, reps=2000, seed=0)
    assert (c.n, c.mean_a, c.mean_b, c.difference, c.only_a, c.only_b) == (4, 0.5, 0.75, 0.25, 1, 2)
    assert c.p_value == pytest.approx(1.0)  # 2 * P(X <= 1), X ~ Bin(3, 1/2) = 1
    assert c.low <= c.difference <= c.high
    # the interval resamples pairs, not the two sides independently: identical shifts have no spread
    same = stats.paired_difference([0.0, 1.0, 0.0, 1.0], [0.5, 1.5, 0.5, 1.5])
    assert (same.difference, same.low, same.high) == (0.5, 0.5, 0.5)
    assert np.isnan(same.p_value) and same.significant
    # a clear improvement on 200 paired episodes is significant both ways
    rng = np.random.default_rng(0)
    before = rng.random(200) < 0.3
    after = before | (rng.random(200) < 0.4)
    c = stats.paired_difference(before, after)
    assert c.significant and c.p_value < 1e-6 and c.only_a == 0
    with pytest.raises(ValueError, match="paired"):
        stats.paired_difference([1, 0], [1])


def test_most_successes_is_the_chernoff_hoeffding_bound():
    """The largest k with exp(-n KL(k/n || p)) >= p_value, checked against the bound computed by hand, and sound:
    the binomial tail beyond it is below p_value (the binomial is the case of equal per-episode probabilities)."""
    import math

    from agentgym_bench.stats import most_successes

    def kl(q, p):
        return q * math.log(q / p) + ((1 - q) * math.log((1 - q) / (1 - p)) if q < 1 else 0.0)

    for p, n in ((0.473, 400), (0.905, 400), (0.3, 50), (0.5, 10)):
        k = most_successes(p, n, 1e-6)
        assert k == n or n * kl((k + 1) / n, p) > math.log(1e6)
        assert k <= math.ceil(n * p) or n * kl(k / n, p) <= math.log(1e6)
        tail = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1, n + 1))
        assert tail < 1e-6
    assert most_successes(0.473, 400, 1e-6) == 241 and most_successes(1.0, 400) == 400
    assert most_successes(0.0, 400) == 0 and most_successes(0.5, 10) == 10
    with pytest.raises(ValueError, match="ceiling in"):
        most_successes(1.5, 10)


def test_the_paired_bootstrap_interval_has_its_confidence_width():
    """On a large sample the percentile interval's half-width is the normal one, z * sd / sqrt(n): 1.96 of them at
    95%, not 1.64 (a one-sided alpha) nor 2.58."""
    from agentgym_bench.stats import paired_difference

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=4000), rng.normal(size=4000)
    d = b - a
    se = d.std() / np.sqrt(len(d))
    for confidence, z in ((0.95, 1.96), (0.9, 1.645)):
        r = paired_difference(a, b, confidence=confidence, reps=4000)
        assert (r.high - r.low) / 2 == pytest.approx(z * se, rel=0.06)
        assert r.low < d.mean() < r.high
